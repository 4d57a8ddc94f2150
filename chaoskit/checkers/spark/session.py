"""The SparkSession the checks run on: built on first use, once per process, then reused.

local[2] unless a master is given (`--spark-master`); quiet logs, no UI, few shuffle partitions
(histories are millions of rows, not billions). pyspark is imported here only, so nothing else
pays for the JVM.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any

DEFAULT_MASTER = "local[2]"
SHUFFLE_PARTITIONS = 4
_lock = threading.Lock()
_session: Any = None
_master: str | None = None


def spark(master: str | None = None) -> Any:
    """The process's SparkSession for `master` (a different master stops the old one first)."""
    global _session, _master
    want = master or DEFAULT_MASTER
    with _lock:
        if _session is not None and _master == want:
            return _session
        if _session is not None:
            _session.stop()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers use our venv's Python
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        _session = (SparkSession.builder.master(want).appName("chaoskit-check")
                    .config("spark.ui.enabled", "false")
                    .config("spark.ui.showConsoleProgress", "false")
                    .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
                    .config("spark.sql.adaptive.enabled", "true")
                    .config("spark.driver.memory", os.environ.get("CHAOSKIT_SPARK_DRIVER_MEMORY", "2g"))
                    .config("spark.sql.session.timeZone", "UTC")
                    .getOrCreate())
        _session.sparkContext.setLogLevel("WARN")
        _master = want
        return _session


def stop() -> None:
    global _session, _master
    with _lock:
        if _session is not None:
            _session.stop()
        _session, _master = None, None
