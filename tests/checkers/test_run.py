"""run_checks and Verdict: composition, applicability, unknowns, the linearizability slot."""
from __future__ import annotations

import pytest

from chaoskit.checkers import run as run_module
from chaoskit.checkers.protocol import Verdict
from chaoskit.checkers.result import CheckResult
from chaoskit.checkers.run import applicable, run_checks
from chaoskit.checkers.source import History
from chaoskit.history import synthetic


def test_none_runs_every_applicable_check_and_a_named_inapplicable_one_is_unknown():
    ops = synthetic.generate(seed=1, events=500).ops
    sends_only = [op for op in ops if op["f"] == "send"]
    assert [c.name for c in applicable(History(sends_only))] == ["nonmonotonic-send"]
    verdict = run_checks(sends_only, None, engine="local")
    assert list(verdict.results) == ["nonmonotonic-send"] and verdict.valid is True
    named = run_checks(sends_only, ["unseen"], engine="local").results["unseen"]
    assert named.valid == "unknown" and "no poll ops" in named.error


def test_an_empty_history_is_unknown_not_a_pass():
    assert run_checks([], engine="local").valid == "unknown"


def test_a_local_check_that_raises_is_unknown(monkeypatch):
    from chaoskit.checkers import local_checks

    monkeypatch.setattr(local_checks, "key_order", lambda t: 1 / 0)
    verdict = run_checks(synthetic.generate(seed=1, events=500).ops, engine="local")
    assert verdict.results["key-order"].valid == "unknown"
    assert "ZeroDivisionError" in verdict.results["key-order"].error
    assert verdict.results["lost-write"].valid is True


def test_linearizable_is_unknown_when_its_checker_is_missing(monkeypatch):
    def missing(spec):
        raise ImportError(f"No module named {spec.split(':')[0]!r}")
    monkeypatch.setattr(run_module, "_function", missing)
    verdict = run_checks([{"process": 0, "type": "invoke", "f": "read", "value": None}], model="cas-register",
                         engine="local")
    assert list(verdict.results) == ["linearizable"]
    assert verdict.results["linearizable"].valid == "unknown"
    assert "not available" in verdict.results["linearizable"].error


def test_linearizable_calls_the_checker_with_ops_and_model(monkeypatch):
    seen = {}

    def check(ops, model, spark=None, budget_s=0):
        seen.update(ops=ops, model=model, spark=spark)
        return CheckResult("linearizable", True)
    monkeypatch.setattr(run_module, "_function", lambda spec: check)
    ops = [{"process": 0, "type": "invoke", "f": "read", "value": None, "index": 0}]
    assert run_checks(ops, ["linearizable"], model="kv", engine="local").valid is True
    assert seen == {"ops": ops, "model": "kv", "spark": None}


def test_bad_arguments_are_explained():
    with pytest.raises(ValueError, match="use one of spark, local"):
        run_checks([], engine="dask")
    with pytest.raises(ValueError, match="no check named 'nope'"):
        run_checks([], ["nope"], engine="local")
    with pytest.raises(ValueError, match="model 'x'"):
        run_checks([], model="x", engine="local")


def test_verdict_json_round_trip_and_problems_do_not_decide():
    v = Verdict({"a": CheckResult("a", True), "b": CheckResult("b", False, {"anomalies": 1},
                                                                 [{"explanation": "x"}])}, ["line 3: bad"])
    again = Verdict.from_json(v.to_json())
    assert again.to_json() == v.to_json() and again.valid is False
    assert Verdict({"a": CheckResult("a", True)}, ["line 1: bad"]).valid is True
