"""Spark is quiet: the terminal shows chaoskit's lines only, Spark's and the JVM's go to the Spark log."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from chaoskit.checkers.spark import session
from chaoskit.history import synthetic
from chaoskit.history.reader import History

SPARK_WORDS = ("WARN", "log4j", "SparkSession", "NativeCodeLoader", "WindowExec", "Exception")


def test_chaoskit_check_on_spark_prints_no_spark_line_and_logs_them_to_the_spark_log(tmp_path: Path):
    history = History(synthetic.generate(seed=3, events=800).ops).to_jsonl(tmp_path / "h.jsonl")
    log = tmp_path / "spark.log"
    exe = Path(sys.executable).with_name("chaoskit")
    out = subprocess.run([str(exe), "check", str(history), "--engine", "spark"], capture_output=True, text=True,
                         timeout=300, env={**os.environ, session.LOG_ENV: str(log)})
    assert out.returncode == 0, out.stderr[-2000:]
    terminal = out.stdout + out.stderr
    assert "verdict: clean: " in out.stdout
    assert not [line for line in terminal.splitlines() if any(w in line for w in SPARK_WORDS)], terminal[-2000:]
    assert "Spark" in log.read_text()  # the JVM's own lines, kept


def test_a_run_gets_the_part_of_the_spark_log_its_checks_wrote(tmp_path: Path, monkeypatch):
    log = tmp_path / "process-spark.log"
    monkeypatch.setenv(session.LOG_ENV, str(log))
    log.write_text("an earlier run's line\n")
    mark = session.log_mark()
    assert session.copy_log_since(mark, tmp_path / "run-spark.log") is None  # nothing new: no file
    with open(log, "a") as f:
        f.write("this run's line\n")
    copied = session.copy_log_since(mark, tmp_path / "run-spark.log")
    assert copied is not None and copied.read_text() == "this run's line\n"
    monkeypatch.setenv(session.LOG_ENV, "-")
    assert session.log_path() is None and session.log_mark() == 0  # "-": the terminal, nothing to copy
