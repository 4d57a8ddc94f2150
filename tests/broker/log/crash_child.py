"""Child process for test_recovery: appends to a PartitionLog until it is killed.

argv: log dir, mode. It prints `ACK <last offset>` after each flushed append. In mode `torn`,
after 20 appends the next write is made to stop halfway (printing `PARTIAL`), so the parent's
kill -9 lands inside a batch; in mode `fast` it appends as fast as it can.
"""
import sys

from chaoskit.broker.log import PartitionLog, segment
from chaoskit.protocol.records import build_batch

directory, mode = sys.argv[1], sys.argv[2]
original_write = segment._write_all


def half_then_wait(fd: int, data: bytes) -> None:
    original_write(fd, data[: len(data) // 2])
    print("PARTIAL", flush=True)
    sys.stdin.read()  # blocks until the parent kills us


log = PartitionLog(directory, segment_bytes=4096)
i = 0
while True:
    if mode == "torn" and i == 20:
        segment._write_all = half_then_wait
    first, last = log.append_as_leader(build_batch([(b"key-%d" % i, b"value-%d" % i * 20)] * 3), leader_epoch=i // 7)
    log.flush()
    print(f"ACK {last}", flush=True)
    i += 1
