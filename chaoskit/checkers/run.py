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
    plugged: dict[str, Any] = {}
    if checks is None:
        chosen = [LINEARIZABLE] if model in ("cas-register", "kv") else applicable(history)
    else:
        plugged = _plugin_checks([n for n in checks if n not in CHECKS])
        chosen = lookup([n for n in checks if n not in plugged])
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
    for name, factory in plugged.items():
        results[name] = _plugin_result(name, factory, history)
    order = list(checks) if checks is not None else [c.name for c in chosen]
    return Verdict({name: results[name] for name in order}, history.problems)


def check_names(names: list[str]) -> None:
    """Raise ValueError (listing the checks) unless every name is ours or a plugin's."""
    plugged = _plugin_checks([n for n in names if n not in CHECKS])
    lookup([n for n in names if n not in plugged])


def _plugin_checks(names: list[str]) -> dict[str, Any]:
    """Checks a plugin added (`chaoskit_add_checks`) among `names`; names nobody knows are left for
    `lookup` to refuse with the list of checks."""
    if not names:
        return {}
    from chaoskit.pluginmanager import collect, get_plugin_manager

    factories = collect(get_plugin_manager(), "checks")
    return {n: factories[n] for n in names if n in factories}


def _plugin_result(name: str, factory: Any, history: History) -> CheckResult:
    """A plugin's check over the ops, in this process: `factory()` gives an object with
    `check(ops) -> CheckResult` (or a callable of the ops); raising is unknown, as for ours."""
    try:
        checker = factory()
        found = checker.check(history.ops) if hasattr(checker, "check") else checker(history.ops)
        if not isinstance(found, CheckResult):
            raise TypeError(f"check {name!r} returned {type(found).__name__}, not a CheckResult")
        return found
    except Exception as e:  # noqa: BLE001 -- a plugin's check that raises is unknown, never a crash
        return CheckResult.unknown(name, e)


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
