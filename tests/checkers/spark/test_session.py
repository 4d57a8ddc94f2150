"""The local Spark session's JVM: started with the JIT limits measured for a check set
(spark/session.py `DRIVER_JIT_OPTIONS`), as defaults a user's own driver options come after."""
from __future__ import annotations

from typing import Any

from chaoskit.checkers.spark import session


def test_the_local_driver_runs_with_the_jit_limits(spark: Any) -> None:
    arguments = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                     .getInputArguments())
    assert all(option in arguments for option in session.DRIVER_JIT_OPTIONS.split()), arguments
    # as Spark's defaults for the driver: spark.driver.extraJavaOptions, a user's, comes after them and wins
    assert spark.sparkContext.getConf().get("spark.driver.defaultJavaOptions") == session.DRIVER_JIT_OPTIONS
