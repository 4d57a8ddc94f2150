"""Recorder: many threads, one order and clock; nothing acknowledged is lost when the runner is SIGKILLed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from chaoskit.history import Recorder


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_many_threads_get_one_contiguous_order_and_clock(tmp_path: Path):
    path = tmp_path / "h.jsonl"
    with Recorder(path) as rec:
        def work(p: int) -> None:
            for i in range(300):
                rec.record({"process": p, "type": "invoke", "f": "send", "value": [p, "k", i]})
        threads = [threading.Thread(target=work, args=(p,)) for p in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    ops = lines(path)
    assert [op["index"] for op in ops] == list(range(8 * 300))
    times = [op["time_ns"] for op in ops]
    assert times == sorted(times)
    for p in range(8):  # each thread's ops in its own order
        assert [op["value"][2] for op in ops if op["process"] == p] == list(range(300))


def test_given_index_and_time_are_kept_and_the_callers_op_untouched(tmp_path: Path):
    op = {"process": 0, "type": "ok", "f": "x", "index": 41, "time_ns": 5, "extra": {"a": 1}}
    with Recorder(tmp_path / "h.jsonl") as rec:
        stamped = rec.record(op)
        second = rec.record({"process": 0, "type": "ok", "f": "y"})
    assert stamped["index"] == 41 and stamped["time_ns"] == 5
    assert second["index"] == 1  # record order, whatever the first op claimed
    assert "index" not in {"process": 0} and op == {"process": 0, "type": "ok", "f": "x", "index": 41,
                                                  "time_ns": 5, "extra": {"a": 1}}
    assert lines(tmp_path / "h.jsonl")[0]["extra"] == {"a": 1}


def test_recording_after_close_says_so(tmp_path: Path):
    rec = Recorder(tmp_path / "h.jsonl")
    rec.close()
    with pytest.raises(RuntimeError, match="after close"):
        rec.record({"process": 0, "type": "ok", "f": "x"})


WRITER = """
import sys, threading
from chaoskit.history import Recorder
rec = Recorder(sys.argv[1])
lock = threading.Lock()
def work(p):
    i = 0
    while True:
        op = rec.record({"process": p, "type": "ok", "f": "send", "value": [p, "k", i]})
        with lock:
            print(op["index"], flush=True)  # acknowledged: the caller has been told
        i += 1
for p in range(4):
    threading.Thread(target=work, args=(p,), daemon=True).start()
threading.Event().wait()
"""


def test_a_sigkilled_recorder_loses_no_acknowledged_op(tmp_path: Path):
    path = tmp_path / "h.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    acked: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 2000 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(int(line))
        assert len(acked) >= 2000, f"the writer acknowledged only {len(acked)} ops (exit {proc.poll()})"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(30)
    on_disk = set()
    for line in path.read_text().splitlines():
        try:
            on_disk.add(json.loads(line)["index"])
        except ValueError:
            pass  # a line cut by the kill was never acknowledged
    missing = sorted(set(acked) - on_disk)
    assert not missing, f"{len(missing)} acknowledged ops missing, e.g. {missing[:5]}"
