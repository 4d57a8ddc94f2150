"""KafkaCheck: one Kafka check of the catalog as a Checker, and the driver that runs a batch of
them over one build of an engine's tables.

    KafkaCheck(CHECKS["key-order"], engine="local").check(None, history)

A check whose op kinds the history lacks is "unknown" (it had nothing to judge); a check that
raises is "unknown" with the error, and the others still run.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

from chaoskit.checkers.catalog import Check
from chaoskit.checkers.engine import Engine, engine_named
from chaoskit.checkers.findings import Found, result
from chaoskit.checkers.result import CheckResult
from chaoskit.history.reader import History

log = logging.getLogger("chaoskit.checks")


class KafkaCheck:
    """A Checker for one catalog entry on one engine (settings as the check factories get them)."""

    def __init__(self, spec: Check, engine: str = "spark", spark_master: str | None = None, **_settings: Any) -> None:
        self.spec = spec
        self.engine = engine_named(engine, spark_master)

    @property
    def name(self) -> str:
        return self.spec.name

    def check(self, test: Any, history: History) -> CheckResult:
        return run_kafka_checks(self.engine, [self.spec], history)[self.name]


def run_kafka_checks(engine: Engine, checks: Sequence[Check], history: History) -> dict[str, CheckResult]:
    """Each check's result, the applicable ones evaluated together over one build of the tables."""
    present = history.kinds()
    results: dict[str, CheckResult] = {}
    ready = []
    for c in checks:
        missing = c.missing(present)
        if missing:  # nothing to judge, not an error: a default check then does not decide the verdict
            results[c.name] = CheckResult.nothing_to_judge(c.name, f"the history has no {', '.join(sorted(missing))} "
                                                                   "ops, which this check reads")
        else:
            ready.append(c)
    if not ready:
        return results
    try:
        with engine.tables(history) as tables:
            results.update(_evaluate(engine, ready, tables))
    except Exception as e:  # noqa: BLE001 -- tables that cannot be built leave every check unknown
        results.update({c.name: CheckResult.unknown(c.name, e) for c in ready if c.name not in results})
    return results


def _evaluate(engine: Engine, checks: Sequence[Check], tables: Any) -> dict[str, CheckResult]:
    """Each check's result. A check that failed beside others (or all of them, when the engine
    could not tell which one broke) runs again alone, and only a failure alone makes it unknown."""
    try:
        found: dict[str, Found | Exception] = dict(engine.evaluate(checks, tables))
    except Exception as e:  # noqa: BLE001 -- which one broke is not known: each alone below
        found = {c.name: e for c in checks}
    out = {}
    for c in checks:
        got = found[c.name]
        if isinstance(got, Exception) and len(checks) > 1:
            log.warning("check %s failed beside other checks (%s: %s); running it again alone",
                        c.name, type(got).__name__, str(got).splitlines()[0] if str(got) else "")
            try:
                got = engine.evaluate([c], tables)[c.name]
            except Exception as e:  # noqa: BLE001 -- a check that raises is unknown, never a crash
                got = e
        out[c.name] = CheckResult.unknown(c.name, got) if isinstance(got, Exception) else result(c.name, got)
    return out
