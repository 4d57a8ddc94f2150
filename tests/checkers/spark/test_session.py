"""The local Spark session's JVM: started with the JIT limits measured for a check set
(spark/session.py `DRIVER_JIT_OPTIONS`), as defaults a user's own driver options come after."""
from __future__ import annotations

import json
import subprocess
import sys

from chaoskit.checkers.spark import session

# a process of its own: this one's JVM may have been launched before, by a test with other settings
_PRINT_JVM = """
import json
from chaoskit.checkers.spark.session import spark, stop
s = spark()
jvm = s.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
print(json.dumps({"arguments": list(jvm.getInputArguments()),
                  "defaults": s.sparkContext.getConf().get("spark.driver.defaultJavaOptions")}))
stop()
"""


def test_the_local_driver_runs_with_the_jit_limits() -> None:
    out = subprocess.run([sys.executable, "-c", _PRINT_JVM], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(option in got["arguments"] for option in session.DRIVER_JIT_OPTIONS.split()), got["arguments"]
    # as Spark's defaults for the driver: spark.driver.extraJavaOptions, a user's, comes after them and wins
    assert got["defaults"] == session.DRIVER_JIT_OPTIONS
