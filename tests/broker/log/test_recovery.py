"""Recovery after kill -9 of a real process that was appending."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from chaoskit.broker.log import PartitionLog
from chaoskit.protocol.records import split_batches

CHILD = Path(__file__).with_name("crash_child.py")


def run_until(directory: Path, mode: str, stop_when, timeout: float = 20.0) -> list[str]:
    """Start the appending child, kill -9 it once stop_when(lines) holds; its stdout lines."""
    child = subprocess.Popen([sys.executable, str(CHILD), str(directory), mode], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + timeout
        while not stop_when(lines):
            line = child.stdout.readline()
            if not line:
                raise AssertionError(f"child exited early: {child.stderr.read()}")
            lines.append(line.strip())
            assert time.monotonic() < deadline, f"child did not get there in {timeout}s: {lines[-3:]}"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        for stream in (child.stdin, child.stdout, child.stderr):
            stream.close()
    assert child.returncode == -signal.SIGKILL
    return lines


def acked(lines: list[str]) -> int:
    return max(int(line.split()[1]) for line in lines if line.startswith("ACK"))


def test_torn_tail_is_truncated_and_logged(tmp_path: Path, caplog):
    lines = run_until(tmp_path, "torn", lambda ls: bool(ls) and ls[-1] == "PARTIAL")
    last_acked = acked(lines)
    active = max(tmp_path.glob("*.log"))
    size_on_disk = active.stat().st_size
    with PartitionLog(tmp_path, segment_bytes=4096) as log:
        assert log.log_end_offset == last_acked + 1
        [damage] = log.damage
        assert Path(damage.file) == active and damage.position + damage.dropped_bytes == size_on_disk
        assert len(split_batches(log.read(0, 1 << 30))) > 0
        assert log.epochs.latest_epoch == 19 // 7
        assert log.append_as_leader(split_batches(log.read(0, 1 << 30))[:1], leader_epoch=5)[0] == last_acked + 1
    assert f"{active}: truncating {damage.dropped_bytes} bytes of torn or corrupt tail at byte offset {damage.position}" \
        in caplog.text


def test_every_acknowledged_batch_survives_a_kill_during_fast_appends(tmp_path: Path):
    lines = run_until(tmp_path, "fast", lambda ls: sum(line.startswith("ACK") for line in ls) >= 200)
    with PartitionLog(tmp_path, segment_bytes=4096) as log:
        assert log.log_end_offset >= acked(lines) + 1
        assert len(log.segments) > 1
        data = b"".join(log.read(s.base_offset, 1 << 30) for s in log.segments)
        assert split_batches(data)  # every stored batch passes its CRC
