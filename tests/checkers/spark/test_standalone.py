"""The checks on a real Spark cluster: a standalone master and one worker, or a Spark Connect server,
started with pyspark's own launcher (bin/spark-class) on loopback; `chaoskit check --spark-master
spark://...` or `sc://...` gives the verdict of this process. They are stopped however the test ends."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from chaoskit.checkers.spark.session import LOG_ENV
from chaoskit.cluster.waiting import free_port, port_open, wait_for
from chaoskit.history import synthetic
from chaoskit.history.reader import History

CHAOSKIT = Path(sys.executable).with_name("chaoskit")


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _start(cls: str, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "wb") as out:  # the child keeps its own descriptor
        return subprocess.Popen([str(_spark_home() / "bin" / "spark-class"), cls, *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _exited(proc: subprocess.Popen) -> str | None:
    return None if proc.poll() is None else f"it exited with {proc.returncode}"


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    env = {**os.environ, "SPARK_HOME": str(_spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "SPARK_WORKER_DIR": str(tmp_path / "work")}
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
        procs.append(_start("org.apache.spark.deploy.master.Master", ["--host", "127.0.0.1", "--port", str(port),
                            "--webui-port", str(free_port())], master_log, env))
        wait_for(lambda: port_open("127.0.0.1", port), 90, "the Spark master listening", master_log,
                 abort=lambda: _exited(procs[0]))
        procs.append(_start("org.apache.spark.deploy.worker.Worker", [url, "--host", "127.0.0.1", "--cores", "1",
                            "--memory", "1g", "--webui-port", str(free_port())], worker_log, env))
        wait_for(lambda: "Successfully registered with master" in worker_log.read_text(errors="replace"), 90,
                 "the Spark worker registered", worker_log, abort=lambda: _exited(procs[1]))
        yield url, env
    finally:
        for proc in reversed(procs):
            _stop(proc)


@pytest.fixture
def connect_server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    """A Spark Connect server (its own local[2] driver), as sbin/start-connect-server.sh starts one."""
    env = {**os.environ, "SPARK_HOME": str(_spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable}
    port, log = free_port(), tmp_path / "connect.log"
    proc = _start("org.apache.spark.deploy.SparkSubmit", [
        "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "chaoskit-connect",
        "--master", "local[2]", "--conf", "spark.ui.enabled=false",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", f"spark.connect.grpc.binding.port={port}",
        "spark-internal"], log, env)
    try:
        wait_for(lambda: port_open("127.0.0.1", port), 120, "the Spark Connect server listening", log,
                 abort=lambda: _exited(proc))
        yield f"sc://127.0.0.1:{port}", env, log
    finally:
        _stop(proc)


def _check(history: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    out = subprocess.run([str(CHAOSKIT), "check", str(history), "--json", *args], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode in (0, 1), out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.nightly  # about 55 s: nightly to keep CI under 30 minutes; CI runs the same checks on local[2]
def test_the_checks_on_a_standalone_cluster_give_the_verdict_of_this_process(standalone, tmp_path: Path):
    url, env = standalone
    ops = synthetic.generate(seed=6, events=3000, plant=["key-order", "lost-write", "duplicate"]).ops
    history = History(ops).to_jsonl(tmp_path / "history.jsonl")
    here = _check(history, env, "--engine", "local")
    there = _check(history, {**env, LOG_ENV: str(tmp_path / "driver.log")}, "--spark-master", url)  # auto: on Spark
    assert (here.pop("engine"), there.pop("engine")) == ("local", "spark")
    assert there == here and here["valid"] is False
    assert {n for n, r in here["results"].items() if r["valid"] is False} == {"key-order", "lost-write", "duplicate"}
    assert "Registering app chaoskit-check" in (tmp_path / "master.log").read_text(errors="replace")  # it ran there


@pytest.mark.nightly  # ~40 s, as the standalone cluster's case: the same engine over another transport
def test_the_checks_through_spark_connect_give_the_verdict_of_this_process(connect_server, tmp_path: Path):
    url, env, log = connect_server
    ops = synthetic.generate(seed=7, events=3000, plant=["poll-skip", "unseen", "inconsistent-offsets"]).ops
    history = History(ops).to_jsonl(tmp_path / "history.jsonl")
    here = _check(history, env, "--engine", "local")
    there = _check(history, env, "--spark-master", url)
    assert (here.pop("engine"), there.pop("engine")) == ("local", "spark")
    assert there == here and here["valid"] is False
    assert {n for n, r in here["results"].items() if r["valid"] is False} == \
        {"poll-skip", "unseen", "inconsistent-offsets"}
    assert "SparkConnectExecutionManager" in log.read_text(errors="replace")  # the server ran the plans
