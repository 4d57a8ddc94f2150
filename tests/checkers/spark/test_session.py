"""The local Spark session's JVM: started with the JIT limits measured for a check set
(spark/session.py `DRIVER_JIT_OPTIONS`), as defaults a user's own driver options come after, on
the newest JDK installed that Spark supports unless JAVA_HOME names one (`driver_java_home`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit.checkers.spark import session

# a process of its own: this one's JVM may have been launched before, by a test with other settings
_PRINT_JVM = """
import json
from chaoskit.checkers.spark.session import spark, stop
s = spark()
jvm = s.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
print(json.dumps({"arguments": list(jvm.getInputArguments()),
                  "java": s.sparkContext._jvm.java.lang.System.getProperty("java.home"),
                  "defaults": s.sparkContext.getConf().get("spark.driver.defaultJavaOptions")}))
stop()
"""


_NO_JAVA_HOME = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}


def _driver(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", _PRINT_JVM], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def default_driver() -> dict:
    """The driver a process without JAVA_HOME launches (one JVM, read by the tests below)."""
    return _driver(_NO_JAVA_HOME)


def test_the_local_driver_runs_with_the_jit_limits(default_driver: dict) -> None:
    got = default_driver
    assert all(option in got["arguments"] for option in session.DRIVER_JIT_OPTIONS.split()), got["arguments"]
    # as Spark's defaults for the driver: spark.driver.extraJavaOptions, a user's, comes after them and wins
    assert got["defaults"] == session.DRIVER_JIT_OPTIONS


def _jdk(root: Path, name: str, version: str, java: bool = True) -> Path:
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    if java:
        (home / "bin" / "java").write_text("#!/bin/sh\n")
        (home / "bin" / "java").chmod(0o755)
    return home


def test_the_newest_jdk_spark_supports_is_chosen_over_17(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    _jdk(tmp_path, "java-17", "17.0.15")
    _jdk(tmp_path, "jdk-8", "1.8.0_402")
    _jdk(tmp_path, "jdk-26", "26")  # newer than any Spark supports
    _jdk(tmp_path, "jdk-25-jre-only", "25.0.3", java=False)  # no launcher: not a JDK to run
    assert session.driver_java_home(tmp_path) is None  # 17 only: pyspark's own choice stands
    newest = _jdk(tmp_path, "jdk-21", "21.0.4")
    assert session.driver_java_home(tmp_path) == str(newest)
    assert [session.java_major(tmp_path / n) for n in ("jdk-8", "jdk-26", "java-17")] == [8, 26, 17]
    assert session.java_major(tmp_path / "absent") is None


def test_java_home_set_by_the_user_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _jdk(tmp_path, "jdk-25", "25.0.3")
    monkeypatch.setenv("JAVA_HOME", "/somewhere/else")
    assert session.driver_java_home(tmp_path) is None


def test_the_driver_jvm_is_the_one_chosen(default_driver: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real driver runs on the JDK `driver_java_home` names (this machine's newest), and on the
    user's JAVA_HOME when it is set."""
    monkeypatch.delenv("JAVA_HOME", raising=False)  # as in the driver's process
    chosen = session.driver_java_home()
    if chosen is None:
        pytest.skip("no JDK newer than 17 under /usr/lib/jvm: the driver runs on pyspark's default java")
    assert Path(default_driver["java"]).resolve() == Path(chosen).resolve()
    default = Path("/usr/lib/jvm/default-java")
    if default.exists():
        assert Path(_driver({**_NO_JAVA_HOME, "JAVA_HOME": str(default)})["java"]).resolve() == default.resolve()
