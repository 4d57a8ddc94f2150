"""run_checks: a history's checks on one engine, composed into a Verdict.

    run_checks(History.from_path(p))                       # every applicable Kafka check, on Spark
    run_checks(h, ["key-order", "lost-write"], engine="local")
    run_checks(h, ["linearizable"], model="cas-register")

A check that raises is "unknown" with the error; the others still run. On Spark the history is
read from its Parquet file (written to a temporary one when it came from elsewhere).
"""
from __future__ import annotations

import gc
import importlib
import tempfile
from pathlib import Path
from typing import Any, Callable

from chaoskit.checkers.catalog import CHECKS, KAFKA_CHECKS, LINEARIZABLE, MODELS, Check, lookup
from chaoskit.checkers.findings import result
from chaoskit.checkers.protocol import Verdict
from chaoskit.checkers.result import CheckResult
from chaoskit.checkers.source import History, as_history

ENGINES = ("spark", "local")


def _function(spec: str) -> Callable[..., Any]:
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def applicable(history: History) -> list[Check]:
    present = history.kinds()
    return [c for c in KAFKA_CHECKS if c.needs <= present]


def run_checks(history: Any, checks: list[str] | None = None, engine: str = "spark", master: str | None = None,
               model: str | None = None, budget_s: float = 60.0) -> Verdict:
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: use one of {', '.join(ENGINES)}")
    if model is not None and model not in MODELS:
        raise ValueError(f"model {model!r}: use one of {', '.join(MODELS)}")
    history = as_history(history)
    if checks is None:
        chosen = [LINEARIZABLE] if model in ("cas-register", "kv") else applicable(history)
    else:
        chosen = lookup(list(checks))
    present = history.kinds()
    results: dict[str, CheckResult] = {}
    kafka = []
    for c in chosen:
        if c is LINEARIZABLE:
            results[c.name] = _linearizable(history, model, engine, master, budget_s)
        elif not c.needs <= present:
            results[c.name] = CheckResult.unknown(c.name, f"the history has no {', '.join(sorted(c.needs - present))} "
                                                          "ops, which this check reads")
        else:
            kafka.append(c)
    if kafka:
        results.update(_kafka_local(history, kafka) if engine == "local" else _kafka_spark(history, kafka, master))
    return Verdict({c.name: results[c.name] for c in chosen}, history.problems)


def _guarded(check: Check, run: Callable[[], Any]) -> CheckResult:
    try:
        return result(check.name, run())
    except Exception as e:  # noqa: BLE001 -- a check that raises is unknown, never a crash
        return CheckResult.unknown(check.name, e)


def _kafka_local(history: History, checks: list[Check]) -> dict[str, CheckResult]:
    from chaoskit.checkers.local_tables import build

    # millions of small acyclic objects: the cyclic collector would only rescan them, again and again
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            tables = build(history.ops)
        except Exception as e:  # noqa: BLE001
            return {c.name: CheckResult.unknown(c.name, e) for c in checks}
        return {c.name: _guarded(c, lambda c=c: _function(c.local)(tables)) for c in checks}
    finally:
        if collecting:
            gc.enable()


def _kafka_spark(history: History, checks: list[Check], master: str | None) -> dict[str, CheckResult]:
    from chaoskit.checkers.spark_session import spark

    with tempfile.TemporaryDirectory(prefix="chaoskit-check-") as tmp:
        try:
            path = history.source or history.to_parquet(Path(tmp) / "history.parquet")
            session = spark(master)
            from chaoskit.checkers.spark_checks import SparkTables
            tables = SparkTables(session.read.parquet(str(path)))
        except Exception as e:  # noqa: BLE001
            return {c.name: CheckResult.unknown(c.name, e) for c in checks}
        try:
            return _evaluate_spark(tables, checks)
        finally:
            tables.release()


def _evaluate_spark(tables: Any, checks: list[Check]) -> dict[str, CheckResult]:
    """All checks in one Spark job; if that job fails, each alone, so one broken check is the only unknown."""
    from chaoskit.checkers.spark_checks import evaluate

    results: dict[str, CheckResult] = {}
    plans = {}
    for c in checks:
        try:
            plans[c.name] = _function(c.spark)(tables)
        except Exception as e:  # noqa: BLE001 -- a check that cannot even be planned is unknown
            results[c.name] = CheckResult.unknown(c.name, e)
    try:
        results.update({name: result(name, found) for name, found in evaluate(plans).items()})
    except Exception:  # noqa: BLE001 -- find which one broke
        by_name = {c.name: c for c in checks}
        for name, plan in plans.items():
            results[name] = _guarded(by_name[name], lambda name=name, plan=plan: evaluate({name: plan})[name])
    return results


def _linearizable(history: History, model: str | None, engine: str, master: str | None,
                  budget_s: float) -> CheckResult:
    name = LINEARIZABLE.name
    if model in (None, "kafka"):
        model = "kafka"
    try:
        check = _function(LINEARIZABLE.local)
    except ImportError as e:
        return CheckResult.unknown(name, f"the linearizability checker is not available ({e})")
    try:
        session = None
        if engine == "spark":
            from chaoskit.checkers.spark_session import spark
            session = spark(master)
        return check(history.ops, model, spark=session, budget_s=budget_s)
    except Exception as e:  # noqa: BLE001
        return CheckResult.unknown(name, e)


__all__ = ["run_checks", "applicable", "CHECKS", "ENGINES"]
