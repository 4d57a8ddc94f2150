"""Node life cycle on a tiny real child process: READY line, labels, stop/kill/pause, log on timeout."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil
import pytest

from chaoskit.cluster.node import RUN_ID_ENV, HasLogs, Killable, Node, NodeError, Pausable
from chaoskit.cluster.waiting import NotReady, wait_for

SCRIPT = """
import signal, sys, time, json
signal.signal(signal.SIGTERM, lambda *a: (print("got SIGTERM", file=sys.stderr), sys.exit(0)))
print("booting", file=sys.stderr)
if {fail}:
    print("config key foo.bar is wrong", file=sys.stderr); sys.exit(2)
if not {ready}:
    time.sleep(60)
print("READY " + json.dumps({{"port": 1234}}), flush=True)
n = 0
while True:
    n += 1
    print(f"tick {{n}}", flush=True)
    time.sleep(0.02)
"""


class ScriptNode(Node):
    role = "script"
    reads_ready_line = True
    ready_timeout = 10.0

    def __init__(self, tmp: Path, ready: bool = True, fail: bool = False) -> None:
        super().__init__("script-1", "run-node-test", tmp)
        self.source = SCRIPT.format(ready=ready, fail=fail)

    def command(self) -> list[str]:
        return [sys.executable, "-c", self.source, f"--run-id={self.run_id}"]


def ticks(node: Node) -> int:
    return node.log_path.read_text().count("tick ")


def test_start_reads_ready_line_and_labels_the_process(tmp_path: Path):
    with ScriptNode(tmp_path) as node:
        assert node.ready_info == {"port": 1234}
        proc = psutil.Process(node.pid)
        assert proc.environ()[RUN_ID_ENV] == "run-node-test"
        assert "--run-id=run-node-test" in proc.cmdline()
        assert isinstance(node, Killable) and isinstance(node, Pausable) and isinstance(node, HasLogs)
        with pytest.raises(NodeError, match="already running"):
            node.start()
    assert not node.running
    assert "got SIGTERM" in node.log_path.read_text()


def test_pause_freezes_and_resume_thaws(tmp_path: Path):
    with ScriptNode(tmp_path) as node:
        wait_for(lambda: ticks(node) > 2, 5, "ticking")
        node.pause()
        wait_for(lambda: psutil.Process(node.pid).status() == psutil.STATUS_STOPPED, 5, "stopped state")
        frozen = ticks(node)
        time.sleep(0.3)  # a frozen process must not make progress over a stretch of time
        assert ticks(node) <= frozen + 1  # at most a line already in the pipe
        node.resume()
        wait_for(lambda: ticks(node) > frozen + 3, 5, "ticking again")
        node.pause()
    assert not node.running  # stop() continues a paused process so it can act on SIGTERM


def test_kill_is_immediate_and_restart_works(tmp_path: Path):
    node = ScriptNode(tmp_path)
    node.start()
    try:
        first = node.pid
        node.kill()
        assert not node.running and not psutil.pid_exists(first) or psutil.Process(first).status() == "zombie"
        node.start(clean=False)
        assert node.running and node.pid != first and node.ready_info == {"port": 1234}
    finally:
        node.stop()


def test_exit_before_ready_fails_fast_with_the_log(tmp_path: Path):
    node = ScriptNode(tmp_path, fail=True)
    started = time.monotonic()
    with pytest.raises(NotReady) as err:
        node.start()
    assert time.monotonic() - started < 5, "an exited process must not be waited on until the timeout"
    assert "exited with code 2" in str(err.value)
    assert "config key foo.bar is wrong" in str(err.value)


def test_timeout_attaches_the_log(tmp_path: Path):
    node = ScriptNode(tmp_path, ready=False)
    node.ready_timeout = 1.0
    try:
        with pytest.raises(NotReady) as err:
            node.start()
        assert "not within 1.0s" in str(err.value) and "booting" in str(err.value)
    finally:
        node.stop()
