"""SparkEngine: the Kafka checks as one Spark job over the history's Parquet copy.

The history's own Parquet file is read when it has one (a run writes history.parquet beside its
JSONL); otherwise a temporary copy is written for the job and removed after it.
"""
from __future__ import annotations

import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Sequence

from chaoskit.checkers.catalog import Check
from chaoskit.checkers.findings import Found
from chaoskit.history.parquet import write_parquet
from chaoskit.history.reader import History


@dataclass(frozen=True)
class SparkEngine:
    master: str | None = None  # None: local[2]
    name: str = "spark"

    @contextmanager
    def tables(self, history: History) -> Iterator[Any]:
        import pyarrow.parquet as pq

        from chaoskit.checkers.spark.session import size_shuffles, spark
        from chaoskit.checkers.spark.tables import SparkTables
        from chaoskit.history.jepsen_kafka import jepsen_fs

        with tempfile.TemporaryDirectory(prefix="chaoskit-check-") as tmp:
            path = history.source or write_parquet(history.ops, Path(tmp) / "history.parquet")
            session = spark(self.master)
            size_shuffles(session, pq.ParquetFile(path).metadata.num_rows)
            tables = SparkTables(session.read.parquet(str(path)))
            tables.jepsen = bool(jepsen_fs(history))
            try:
                yield tables
            finally:
                tables.release()

    def evaluate(self, checks: Sequence[Check], tables: Any) -> dict[str, Found | Exception]:
        """Every check over the same tables, a job per check (spark/checks.py `evaluate`)."""
        from chaoskit.checkers.local.jepsen_checks import pick
        from chaoskit.checkers.spark import checks as ours
        from chaoskit.checkers.spark import jepsen_checks

        return ours.evaluate({c.name: partial(pick(ours, jepsen_checks, c.function, tables.jepsen), tables)
                              for c in checks})
