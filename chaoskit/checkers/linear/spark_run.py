"""Searching sub-histories in parallel on Spark: one task per slice of sub-histories, each
searched by the same `search` as in-process (mapPartitions), results collected to the driver.

Workers import chaoskit, so the session's Python must be this environment's
(`spark.pyspark.python`, or PYSPARK_PYTHON), as the process's session (`local_session`) sets it.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Hashable, Iterable, Iterator

from chaoskit.checkers.linear.models import model_named
from chaoskit.checkers.linear.search import SearchResult, search
from chaoskit.checkers.linear.subhistory import Operation

TASKS_PER_CORE = 1  # tasks cost ~60 ms each in local mode; dealing largest-first already balances


def _as_row(op: Operation) -> tuple:
    # plain tuples pickle about ten times faster than slotted dataclasses (measured on 100,000 ops)
    return (op.index, op.process, op.f, op.arg, op.call, op.ret, op.completion_index)


def _search_slice(model_name: str, budget_s: float,
                  items: Iterable[tuple[Hashable, list[tuple]]]) -> Iterator[tuple[Hashable, SearchResult]]:
    model = model_named(model_name)
    for key, rows in items:
        yield key, search([Operation(*row) for row in rows], model, budget_s)


def search_on_spark(spark: Any, subs: dict[Hashable, list[Operation]], model_name: str,
                    budget_s: float) -> dict[Hashable, SearchResult]:
    if not subs:
        return {}
    sc = spark.sparkContext
    # largest first, dealt round-robin over the slices, so slices get similar work
    items = sorted(((key, [_as_row(op) for op in ops]) for key, ops in subs.items()), key=lambda kv: -len(kv[1]))
    slices = min(len(items), max(1, sc.defaultParallelism) * TASKS_PER_CORE)
    dealt = [items[s::slices] for s in range(slices)]
    rdd = sc.parallelize(dealt, slices).flatMap(lambda chunk: chunk)
    return dict(rdd.mapPartitions(partial(_search_slice, model_name, budget_s)).collect())


def local_session(master: str = "local[2]") -> Any:
    """The process's SparkSession (checkers/spark/session.py): the Kafka checks' JVM settings and
    Spark log, and Python workers that run this interpreter (so they import this chaoskit)."""
    from chaoskit.checkers.spark.session import spark

    return spark(master)
