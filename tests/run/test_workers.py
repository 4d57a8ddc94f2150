"""The worker pool (chaoskit.run.workers): each op recorded before and after, a raising client an
`info` completion, and the final read that drains until every acknowledged value was delivered."""
from __future__ import annotations

import itertools
import threading
import time

from chaoskit.run.workers import WorkerPool


class Log:
    """A toy topic: sends append, polls read from each consumer's position."""

    def __init__(self, lose: set[int] = frozenset(), offsets: bool = False):
        self.values, self.lose, self.lock = [], lose, threading.Lock()
        self.positions: dict[int, int] = {}
        self.offsets, self.next = offsets, 0  # with offsets: sends answer where they were written, as clients do

    def open(self, test, process):
        return self

    def invoke(self, test, op):
        with self.lock:
            if op["f"] == "send":
                if op["value"] == "boom":
                    raise ConnectionError("broker gone")
                where = {"topic": "t", "partition": 0, "offset": self.next} if self.offsets else {}
                self.next += 1
                if op["value"] not in self.lose:  # a lost one: acknowledged, its offset then truncated away
                    self.values.append((where.get("offset", len(self.values)), op["value"]))
                return {**op, "type": "ok", **where}
            start = self.positions.get(op["process"], 0)
            read = self.values[start:start + 2]
            self.positions[op["process"]] = start + len(read)
            return {**op, "type": "ok", "topic": "t", "value": [[0, o, None, v, None] for o, v in read]}


class Workload:
    """Process 0 sends `sends` then stops; process 1 polls once, lazily, then stops; drain reads."""

    processes = {"producer": [0], "consumer": [1]}

    def __init__(self, sends):
        self.sends, self.polled = iter(sends), False

    def op(self, process, elapsed_s):
        if process == 0:
            value = next(self.sends, None)
            return None if value is None else {"f": "send", "value": value}
        if self.polled:
            return None
        self.polled = True
        return {"f": "poll"}

    def drain_op(self, process):
        return {"f": "poll"} if process == 1 else None


def pool(sends, lose=frozenset(), offsets=False):
    log, ops, clock = Log(lose, offsets), [], itertools.count()
    p = WorkerPool(Workload(sends), {0: log, 1: log}, None, ops.append, lambda: next(clock) * 0.001)
    return p, ops


def test_every_op_is_recorded_invoked_then_completed_and_a_raising_client_is_info():
    p, ops = pool([1, "boom", 2])
    p.start()
    assert p.join(10)
    sends = [op for op in ops if op["f"] == "send"]
    assert [(op["type"], op["value"]) for op in sends] == [("invoke", 1), ("ok", 1), ("invoke", "boom"),
                                                           ("info", "boom"), ("invoke", 2), ("ok", 2)]
    assert "ConnectionError: broker gone" in sends[3]["error"] and all(op["process"] == 0 for op in sends)
    assert len(p.acked) == 2


def test_the_drain_reads_until_every_acknowledged_value_was_delivered():
    p, ops = pool(list(range(7)))
    p.start()
    p.join(10)
    assert p.drain(10) is True and p.undelivered == 0
    delivered = [r[3] for op in ops if op["f"] == "poll" and op["type"] == "ok" for r in op["value"]]
    assert sorted(delivered) == list(range(7))


def test_a_drain_that_cannot_finish_gives_up_at_its_timeout_and_says_so():
    p, _ = pool([1, 2, 3], lose={2})
    p.start()
    p.join(10)
    began = time.monotonic()
    assert p.drain(0.3) is False and p.undelivered == 1
    assert time.monotonic() - began < 10
    assert p.drain_end == "timeout"  # nothing said where the lost value was: the drain waited it out


def test_a_drain_ends_once_the_readers_went_past_every_value_left_unread():
    p, _ = pool([1, 2, 3, 4, 5], lose={2}, offsets=True)  # 2 acknowledged at offset 1, which now holds nothing
    p.start()
    p.join(10)
    assert p.drain(600) is False and p.undelivered == 1
    assert p.drain_end == "passed" and p.now() < 60  # its readers read offsets 2-4: it cannot come, no need to wait
    p, _ = pool([1, 2], lose={2}, offsets=True)  # the lost one is the last: nobody read past it
    p.start()
    p.join(10)
    assert p.drain(3) is False and p.drain_end == "timeout"

