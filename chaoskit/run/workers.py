"""The worker processes of a run: one thread per process, each asking the workload for its next
op, recording the invoke, calling its client and recording the completion.

The pool also keeps what the drain needs: the values of acknowledged sends and the values any poll
delivered. After the run's time is up, consumers go on with the workload's drain ops until every
acknowledged value has been delivered (or the drain's timeout passes): a final read, so that an
acknowledged write no poll saw is a real finding (`unseen`, `lost-write`), not a short read. A
value acknowledged at an offset the consumers have read past (a truncation took it) cannot come:
once everything left is such for PASSED_QUIET_S, the drain ends without waiting out its timeout.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from chaoskit.history.schema import Op, value_text  # value_text: the text the checks join values on
from chaoskit.roles import PENDING, Client, LiveRun, Workload

log = logging.getLogger("chaoskit.workers")
PACE_S = 0.005  # how long a process with nothing to do (PENDING) waits before asking again
# the drain ends early once every value still unread sits below what the consumers read of its
# partition (they went past it: waiting cannot bring it) and that has held this long
PASSED_QUIET_S = 2.0


class WorkerPool:
    def __init__(self, workload: Workload, clients: dict[int, Client], test: LiveRun,
                 record: Callable[[Op], Any], now: Callable[[], float]) -> None:
        self.workload, self.clients, self.test = workload, clients, test
        self.record, self.now = record, now
        self.acked: set[str] = set()
        self.delivered: set[str] = set()
        self.placed: dict[str, tuple[Any, Any, int]] = {}  # acknowledged value -> (topic, partition, offset)
        self.read_to: dict[tuple[Any, Any], int] = {}  # (topic, partition) -> the highest offset a poll delivered
        self.drain_end = ""  # how the drain ended: delivered, passed (the rest is behind the readers), timeout
        self.ops = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- running -------------------------------------------------------------------------------
    def start(self) -> None:
        for process in self.clients:
            t = threading.Thread(target=self._work, args=(process,), name=f"worker-{process}", daemon=True)
            self._threads.append(t)
            t.start()

    def join(self, timeout: float) -> bool:
        """Wait for every process to finish its ops; False if some did not within `timeout`."""
        for t in self._threads:
            t.join(timeout)
        return not any(t.is_alive() for t in self._threads)

    def stop(self) -> None:
        self._stop.set()

    def _work(self, process: int) -> None:
        while not self._stop.is_set():
            op = self.workload.op(process, self.now())
            if op is None:
                return
            if op is PENDING:
                self._stop.wait(PACE_S)
                continue
            self.invoke(process, op)

    def invoke(self, process: int, op: Op) -> Op:
        """One op of `process`, recorded before and after; an exception is an `info` completion."""
        invoked = {**op, "process": process, "type": "invoke"}
        self.record(invoked)
        try:
            done = self.clients[process].invoke(self.test, invoked)
        except Exception as e:  # noqa: BLE001 -- a client crash leaves the op's outcome unknown
            log.debug("process %d: %s raised %r", process, op.get("f"), e)  # the history keeps it, as info
            done = {**invoked, "type": "info", "error": f"{type(e).__name__}: {e}"}
        self.record(done)
        self._note(done)
        return done

    def _note(self, done: Op) -> None:
        with self._lock:
            self.ops += 1
            if done["type"] != "ok":
                return
            if done["f"] == "send":
                value = value_text(done["value"])
                self.acked.add(value)
                if isinstance(done.get("offset"), int):
                    self.placed[value] = (done.get("topic"), done.get("partition"), done["offset"])
            elif done["f"] == "poll":
                for r in done.get("value") or ():
                    self.delivered.add(value_text(r[3]))
                    key = (done.get("topic"), r[0])
                    if isinstance(r[1], int) and r[1] > self.read_to.get(key, -1):
                        self.read_to[key] = r[1]

    # --- the final read ------------------------------------------------------------------------
    @property
    def undelivered(self) -> int:
        with self._lock:
            return len(self.acked - self.delivered)

    def passed(self) -> bool:
        """Whether every acknowledged value not yet delivered sits at an offset below the highest the
        consumers read of its partition: they went past it, so no more reading will deliver it."""
        with self._lock:
            left = self.acked - self.delivered
            return bool(left) and all(v in self.placed and self.read_to.get(self.placed[v][:2], -1) > self.placed[v][2]
                                      for v in left)

    def drain(self, timeout: float) -> bool:
        """Consumers poll until every acknowledged value was delivered; False when some never was
        (the timeout passed, or the consumers went past what is left for PASSED_QUIET_S)."""
        deadline = self.now() + timeout
        readers = [p for p in self.clients if self.workload.drain_op(p) is not None]
        if not readers:
            return self.undelivered == 0
        done = threading.Event()
        since: list[float | None] = [None]  # when the readers were first seen past all that is left

        def finished() -> bool:
            if self.undelivered == 0:
                self.drain_end = "delivered"
                return True
            if not self.passed():
                since[0] = None
                return False
            since[0] = since[0] if since[0] is not None else self.now()
            if self.now() - since[0] >= PASSED_QUIET_S:
                self.drain_end = "passed"
                return True
            return False

        def read(process: int) -> None:
            while not done.is_set() and self.now() < deadline:
                if finished():
                    done.set()
                    return
                self.invoke(process, self.workload.drain_op(process))

        threads = [threading.Thread(target=read, args=(p,), name=f"drain-{p}", daemon=True) for p in readers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, deadline - self.now()) + 30)
        self.drain_end = self.drain_end or "timeout"
        return self.undelivered == 0
