"""The docker backend's commands: `chaoskit cluster up --backend docker` prints the local backend's
JSON (plus its network and images) and SIGTERM removes the run; when no engine answers, it and
`chaoskit images build|list` say what is wrong and how to fix it, exit 3, and print no stack trace
(DOCKER_HOST pointing at a socket nobody listens on)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cluster.docker_engine import EngineUnavailable, engine
from chaoskit.cluster.docker_reaper import leftovers

CHAOSKIT = str(Path(sys.executable).with_name("chaoskit"))


@pytest.fixture
def dead_engine(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}


@pytest.mark.parametrize("argv", [["cluster", "up", "--backend", "docker", "--brokers", "1"],
                                  ["images", "build"], ["images", "list"]])
def test_no_engine_is_a_clear_error_with_exit_3(argv: list[str], dead_engine: dict[str, str], tmp_path: Path):
    done = subprocess.run([CHAOSKIT, *argv], capture_output=True, text=True,
                          timeout=60, env=dead_engine, cwd=tmp_path)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert f"no Docker engine answers at unix://{tmp_path}/no-engine.sock" in done.stderr
    assert "DOCKER_HOST" in done.stderr and "--backend local" in done.stderr  # how to fix it
    assert done.stdout == ""
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").rglob("cluster.json"))


def test_engine_raises_engine_unavailable(dead_engine: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DOCKER_HOST", dead_engine["DOCKER_HOST"])
    with pytest.raises(EngineUnavailable, match="Start the engine"):
        engine(timeout=5)


def _up(tmp_path: Path, backend: str) -> dict[str, Any]:
    """`chaoskit cluster up --backend B --proxied` with 1 broker: its JSON line, then SIGTERM (exit 0)."""
    proc = subprocess.Popen([CHAOSKIT, "cluster", "up", "--backend", backend, "--brokers", "1", "--proxied",
                             "--run-dir", str(tmp_path / backend)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, f"cluster up --backend {backend} exited {proc.wait()}: {proc.stderr.read() if proc.stderr else ''}"
        described = json.loads(line)
        listed = subprocess.run(["kcat", "-L", "-b", described["bootstrap_servers"], "-m", "10"],
                                capture_output=True, text=True, timeout=30)
        assert listed.returncode == 0 and "1 brokers:" in listed.stdout, listed.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        return described
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.nightly  # about 67 s (a cluster per backend): CI keeps the docker backend's node, fault and reaper tests
@pytest.mark.docker
def test_docker_up_prints_the_local_backends_json_and_sigterm_removes_the_run(tmp_path: Path):
    local, docker = _up(tmp_path, "local"), _up(tmp_path, "docker")
    assert (local["backend"], docker["backend"]) == ("local", "docker")
    assert set(docker) - set(local) == {"network", "images"} and set(local) <= set(docker)
    assert sorted(n["name"] for n in docker["nodes"]) == sorted(n["name"] for n in local["nodes"])
    for ln in local["nodes"]:
        dn = next(n for n in docker["nodes"] if n["name"] == ln["name"])
        assert set(ln) - {"config", "data", "ports"} <= set(dn), (ln, dn)
    assert set(docker["proxy"]["links"]) == set(local["proxy"]["links"])  # the same link names
    assert leftovers(engine(), docker["run_id"]) == ([], [])
