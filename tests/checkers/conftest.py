"""One SparkSession for the whole test session (starting Spark costs seconds), stopped at the end."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from chaoskit.checkers.spark import session as spark_session

    session = spark_session.spark()
    try:
        yield session
    finally:
        spark_session.stop()
