"""The docker backend's commands when no engine answers: `chaoskit cluster up --backend docker`,
`chaoskit images build` and `chaoskit images list` say what is wrong and how to fix it, exit 2,
and print no stack trace. DOCKER_HOST points at a socket nobody listens on."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit.cluster.docker_engine import EngineUnavailable, engine

CHAOSKIT = str(Path(sys.executable).with_name("chaoskit"))


@pytest.fixture
def dead_engine(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}


@pytest.mark.parametrize("argv", [["cluster", "up", "--backend", "docker", "--brokers", "1"],
                                  ["images", "build"], ["images", "list"]])
def test_no_engine_is_a_clear_error_with_exit_2(argv: list[str], dead_engine: dict[str, str], tmp_path: Path):
    done = subprocess.run([CHAOSKIT, *argv], capture_output=True, text=True,
                          timeout=60, env=dead_engine, cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert f"no Docker engine answers at unix://{tmp_path}/no-engine.sock" in done.stderr
    assert "DOCKER_HOST" in done.stderr and "--backend local" in done.stderr  # how to fix it
    assert done.stdout == ""
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").rglob("cluster.json"))


def test_engine_raises_engine_unavailable(dead_engine: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DOCKER_HOST", dead_engine["DOCKER_HOST"])
    with pytest.raises(EngineUnavailable, match="Start the engine"):
        engine(timeout=5)
