"""run_checks, compose and Verdict: one checker path for built-in, linearizable and plugin checks;
applicability, unknowns, the linearizability slot."""
from __future__ import annotations

import sys

import pytest

from chaoskit.checkers.catalog import CHECKS
from chaoskit.run.checks import applicable, compose, run_checks
from chaoskit.checkers.result import CheckResult
from chaoskit.checkers.verdict import Verdict
from chaoskit.history import synthetic
from chaoskit.history.reader import History
from chaoskit.pluginmanager import collect, get_plugin_manager


def test_none_runs_every_applicable_check_and_a_named_inapplicable_one_is_unknown():
    ops = synthetic.generate(seed=1, events=500).ops
    sends_only = [op for op in ops if op["f"] == "send"]
    # an offset's values are known from acknowledged sends alone: duplicate and inconsistent-offsets apply
    assert [c.name for c in applicable(History(sends_only))] == ["duplicate", "inconsistent-offsets",
                                                                 "nonmonotonic-send"]
    verdict = run_checks(sends_only, None, engine="local")
    assert list(verdict.results) == ["duplicate", "inconsistent-offsets", "nonmonotonic-send"]
    assert verdict.valid is True
    named = run_checks(sends_only, ["unseen"], engine="local").results["unseen"]
    assert named.valid == "unknown" and "no poll ops" in named.error


def test_an_empty_history_is_unknown_not_a_pass():
    assert run_checks([], engine="local").valid == "unknown"


def test_a_local_check_that_raises_is_unknown(monkeypatch):
    from chaoskit.checkers.local import checks as local_checks

    monkeypatch.setattr(local_checks, "key_order", lambda t: 1 / 0)
    verdict = run_checks(synthetic.generate(seed=1, events=500).ops, engine="local")
    assert verdict.results["key-order"].valid == "unknown"
    assert "ZeroDivisionError" in verdict.results["key-order"].error
    assert verdict.results["lost-write"].valid is True


def test_linearizable_is_unknown_when_its_checker_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "chaoskit.checkers.linear", None)  # the import fails, as if absent
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
    import chaoskit.checkers.linear as linear

    monkeypatch.setattr(linear, "check", check)
    ops = [{"process": 0, "type": "invoke", "f": "read", "value": None, "index": 0}]
    assert run_checks(ops, ["linearizable"], model="kv", engine="local").valid is True
    assert seen == {"ops": ops, "model": "kv", "spark": None}


def test_bad_arguments_are_explained():
    with pytest.raises(ValueError, match="use one of auto, spark, local"):
        run_checks([], engine="dask")
    with pytest.raises(ValueError, match="no check named 'nope'"):
        run_checks([], ["nope"], engine="local")
    with pytest.raises(ValueError, match="model 'x'"):
        run_checks([], model="x", engine="local")


def test_verdict_json_round_trip_and_unreadable_lines_make_a_clean_verdict_unknown():
    v = Verdict({"a": CheckResult("a", True), "b": CheckResult("b", False, {"anomalies": 1},
                                                                 [{"explanation": "x"}])}, ["line 3: bad"])
    again = Verdict.from_json(v.to_json())
    assert again.to_json() == v.to_json() and again.valid is False
    unread = Verdict({"a": CheckResult("a", True)}, ["line 1: bad"])  # a clean verdict over part of a history
    assert unread.valid == "unknown" and "1 line(s) of the history could not be read" in unread.reason


class Judged:
    """A checker that records what it was given."""

    def __init__(self, answer):
        self.answer, self.seen = answer, []

    def check(self, test, history):
        self.seen.append((test, history))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_compose_gives_every_checker_the_run_and_the_history_and_keeps_their_order():
    history = History(synthetic.generate(seed=3, events=300).ops, ["line 9: bad"])
    run = object()
    clean, found = Judged(CheckResult("a", True)), Judged(CheckResult("b", False, {"anomalies": 1}))
    verdict = compose({"b": found, "a": clean}, run, history)
    assert list(verdict.results) == ["b", "a"] and verdict.valid is False and verdict.problems == ["line 9: bad"]
    assert clean.seen == [(run, history)] and found.seen == [(run, history)]


def test_a_checker_that_raises_or_returns_something_else_is_unknown():
    history = History([])
    verdict = compose({"raises": Judged(RuntimeError("boom")), "odd": Judged({"valid": True})}, None, history)
    assert verdict.results["raises"].valid == "unknown" and "RuntimeError: boom" in verdict.results["raises"].error
    assert verdict.results["odd"].valid == "unknown" and "not a CheckResult" in verdict.results["odd"].error


def test_the_built_in_checks_come_from_the_plugin_registry():
    assert set(CHECKS) <= set(collect(get_plugin_manager(), "checks"))


def test_auto_checks_in_this_process_below_the_size_and_on_spark_from_it_or_when_a_master_is_named():
    from chaoskit.checkers.engine import AUTO_SPARK_FROM, chosen_engine

    assert chosen_engine("auto", None, AUTO_SPARK_FROM - 1) == "local"
    assert chosen_engine("auto", None, AUTO_SPARK_FROM) == "spark"
    assert chosen_engine("auto", "spark://127.0.0.1:7077", 10) == "spark"
    assert chosen_engine("local", "spark://127.0.0.1:7077", AUTO_SPARK_FROM) == "local"  # named: as named
    verdict = run_checks(synthetic.generate(seed=4, events=300).ops, ["duplicate"])
    assert verdict.engine == "local" and "engine" not in verdict.to_json()  # the verdict is the same on either


def _sent(process, topic, key, seq, partition, index):
    value = [process, key, seq]
    base = {"process": process, "f": "send", "topic": topic, "key": key, "value": value}
    return [{**base, "type": "invoke", "index": index},
            {**base, "type": "ok", "partition": partition, "offset": 0, "index": index + 1}]


def _polled(process, topic, partition, value, index):
    base = {"process": process, "f": "poll", "topic": topic}
    return [{**base, "type": "invoke", "index": index},
            {**base, "type": "ok", "value": [[partition, 0, value[1], value, 0]], "index": index + 1}]


def test_key_order_leaves_out_the_topics_without_ordered_delivery():
    """On "u" producer 1's k1 is read second record first (a reordering); "o" is in order. With "u"
    unordered (enable.ordered.delivery=false) key-order judges "o" alone; the other checks both."""
    ops = [*_sent(0, "o", "k0", 0, 0, 0), *_sent(1, "u", "k1", 0, 0, 2), *_sent(1, "u", "k1", 1, 1, 4),
           *_polled(2, "o", 0, [0, "k0", 0], 6), *_polled(3, "u", 1, [1, "k1", 1], 8),
           *_polled(3, "u", 0, [1, "k1", 0], 10)]
    assert run_checks(ops, engine="local").results["key-order"].valid is False
    verdict = run_checks(ops, engine="local", unordered_topics=["u"])
    assert verdict.valid is True and verdict.results["key-order"].counts["key_pairs"] == 0
    assert list(verdict.results) == list(run_checks(ops, engine="local").results)  # same checks, same order
    assert verdict.results["lost-write"].counts == run_checks(ops, engine="local").results["lost-write"].counts
    assert run_checks(ops, engine="local", unordered_topics=["o"]).results["key-order"].valid is False


def _at(process, topic, key, seq, partition, offset, index):
    value = [process, key, seq]
    base = {"process": process, "f": "send", "topic": topic, "key": key, "value": value}
    return [{**base, "type": "invoke", "index": index},
            {**base, "type": "ok", "partition": partition, "offset": offset, "index": index + 1}]


def _read(process, topic, partition, records, index):
    base = {"process": process, "f": "poll", "topic": topic}
    return [{**base, "type": "invoke", "index": index},
            {**base, "type": "ok", "value": [[partition, o, v[1], v, 0] for o, v in records], "index": index + 1}]


def test_on_a_compacted_topic_a_record_its_keys_later_record_superseded_may_go_unread():
    """Compaction keeps a key's last record: the consumer reads offsets 1 and 2 only, k0's first value
    (offset 0) superseded by offset 2. On a compacted topic that is no loss; k1's value at offset 1
    unread would be. On a topic not named compacted, the same history is lost-write."""
    ops = [*_at(0, "c", "k0", 0, 0, 0, 0), *_at(0, "c", "k1", 0, 0, 1, 2), *_at(0, "c", "k0", 1, 0, 2, 4),
           *_read(1, "c", 0, [(1, [0, "k1", 0]), (2, [0, "k0", 1])], 6)]
    assert run_checks(ops, ["lost-write", "poll-skip"], engine="local").results["lost-write"].valid is False
    verdict = run_checks(ops, ["lost-write", "poll-skip", "inconsistent-offsets"], engine="local",
                         compacted_topics=["c"])
    assert verdict.valid is True, {n: r.counts for n, r in verdict.results.items()}
    assert verdict.results["inconsistent-offsets"].counts["offsets"] == 3  # judged on every send still
    skipped_k1 = [*_at(0, "c", "k0", 0, 0, 0, 0), *_at(0, "c", "k1", 0, 0, 1, 2), *_at(0, "c", "k0", 1, 0, 2, 4),
                  *_read(1, "c", 0, [(0, [0, "k0", 0])], 6), *_read(1, "c", 0, [(2, [0, "k0", 1])], 8)]
    found = run_checks(skipped_k1, ["lost-write", "poll-skip"], engine="local", compacted_topics=["c"])
    assert found.results["lost-write"].valid is False  # k1's only record was never read: compaction keeps it
