"""The Engine protocol: how the Kafka checks run over a history, in one process or on Spark.

As aiokafka puts its two record implementations behind one protocol, both engines offer the same
two steps: `tables(history)`, the history flattened once into what every check reads (a context
manager: released on exit), and `evaluate(checks, tables)`, each check's Found. The engines agree
exactly: findings.py turns the rows of either into the same CheckResult, and the tests hold them
to it. Engines are values (equal when configured alike), so checks on one engine share its tables.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ContextManager, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from chaoskit.checkers.catalog import Check
    from chaoskit.checkers.findings import Found
    from chaoskit.history.reader import History

ENGINES = ("auto", "spark", "local")
# `auto` checks in this process below this many ops and on Spark from it (or whenever a Spark master
# is named). Measured on the 2-core machine (benchmarks/checker_throughput.py, 2026-11-27): Spark
# local[2] takes 17.7/11.5 s at 1M (first pass/again) against 9.3 s in process, 17.8/17.4 s at 3M
# against 26.7 s (+965 MB), 47.3/45.2 s at 10M against 103.4 s (+3.4 GB); its session and first
# pass cost about 20 s once per process, so a single check in a fresh process is faster on Spark
# from about 5M ops: from there, Spark.
AUTO_SPARK_FROM = 5_000_000


def chosen_engine(name: str, spark_master: str | None, ops: int) -> str:
    """The engine that runs: `name`, or for "auto" Spark when a master is named or the history has
    AUTO_SPARK_FROM ops or more, this process otherwise."""
    if name != "auto":
        return name
    return "spark" if spark_master or ops >= AUTO_SPARK_FROM else "local"


class Engine(Protocol):
    name: str

    def tables(self, history: History) -> ContextManager[Any]:
        """The history's tables, built once for every check of a batch, released on exit."""

    def evaluate(self, checks: Sequence[Check], tables: Any) -> Mapping[str, Found | Exception]:
        """Each check's anomalies over the tables, or the error of a check that failed where the
        engine can tell them apart; otherwise raises. The caller runs a failed check again alone,
        so one broken check is the only unknown (checkers/kafka.py `_evaluate`)."""


def engine_named(name: str, spark_master: str | None = None) -> Engine:
    """The engine called `name`: "local" (this process) or "spark" (`spark_master`, local[2] by default);
    "auto" is resolved first (`chosen_engine`)."""
    if name == "local":
        from chaoskit.checkers.local.engine import LocalEngine

        return LocalEngine()
    if name == "spark":
        from chaoskit.checkers.spark.engine import SparkEngine

        return SparkEngine(spark_master)
    raise ValueError(f"engine {name!r}: use one of {', '.join(ENGINES)}")
