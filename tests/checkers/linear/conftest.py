"""Fixtures of the linearizability tests: a compact way to write hand-built histories, and one
local[2] SparkSession for the whole test session (Spark starts in seconds, not per test)."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

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
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import chaoskit from this venv
    session = (SparkSession.builder.master("local[2]").appName("chaoskit-linear-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.pyspark.python", sys.executable).getOrCreate())
    try:
        yield session
    finally:
        session.stop()
