"""Fixtures of the linearizability tests: a compact way to write hand-built histories, and one
local[2] SparkSession for the whole test session (Spark starts in seconds, not per test)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chaoskit.checkers.linear.spark_run import local_session
from chaoskit.checkers.spark.session import stop

Row = tuple  # (process, type, f, value) or (process, type, f, value, key)


def build(*rows: Row) -> list[dict[str, Any]]:
    ops = []
    for index, row in enumerate(rows):
        process, kind, f, value, *key = row
        op = {"index": index, "time_ns": index * 1000, "process": process, "type": kind, "f": f, "value": value}
        if key:
            op["key"] = key[0]
        ops.append(op)
    return ops


@pytest.fixture
def history() -> Callable[..., list[dict[str, Any]]]:
    """history((process, type, f, value[, key]), ...) -> op dicts in that (real-time) order."""
    return build


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = local_session("local[2]")
    try:
        yield session
    finally:
        stop()
