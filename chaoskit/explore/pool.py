"""Runs in parallel, each lane in a worker process of its own.

A run's clients are threads of the process that runs it; two runs in one process would share one
interpreter lock, so each lane (a kept cluster, lanes.py) lives in a child process that takes a
test, runs it on its cluster and answers with the run's folder. The search reads the folder (the
verdict, the history, the node logs), so nothing else has to cross. A worker ends with its lane's
cluster when the pool closes, or when its parent is gone (its pipe closes).
"""
from __future__ import annotations

import json
import logging
import multiprocessing
import queue
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from chaoskit.run.chaostest import ChaosTest

log = logging.getLogger("chaoskit.explore")
SLACK_S = 600.0  # past a test's duration and drain, how long a run may take before its worker is given up


class WorkerGone(RuntimeError):
    """A lane's worker process died or stopped answering; the run's outcome is unknown."""


def _serve(conn: Any, root: str, name: str) -> None:
    """The worker: run each test it is sent on its lane; answer with the run folder. Its log lines
    (the runs' clients and faults) go to lanes/<name>.log, not to the explore's terminal."""
    Path(root).mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.INFO, filename=str(Path(root) / f"{name}.log"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from chaoskit.explore.lanes import Lane
    from chaoskit.run.runner import run

    lane = Lane(Path(root), name)
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return  # the parent is gone
            if message is None:
                return
            began = time.monotonic()
            try:
                result = run(ChaosTest.from_json(json.loads(message)), lane=lane)
                conn.send({"run_dir": str(result.run_dir), "seconds": time.monotonic() - began,
                           "clusters": lane.started})
            except Exception as e:  # noqa: BLE001 -- the pool reports it as the run's error
                conn.send({"error": f"{type(e).__name__}: {e}", "seconds": time.monotonic() - began})
    finally:
        lane.close()


class _Worker:
    def __init__(self, root: Path, name: str) -> None:
        self.root, self.name = root, name
        self.proc: Any = None
        self.conn: Any = None

    def ensure(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            return
        ctx = multiprocessing.get_context("spawn")  # no inherited threads or locks
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, str(self.root), self.name), name=self.name, daemon=True)
        self.proc.start()
        child.close()

    def run(self, test: ChaosTest) -> dict[str, Any]:
        self.ensure()
        self.conn.send(json.dumps(test.to_json()))
        deadline = test.duration_s + test.drain_timeout_s + SLACK_S
        if not self.conn.poll(deadline):
            self.stop()
            raise WorkerGone(f"{self.name} gave no answer in {deadline:.0f} s; it was stopped")
        try:
            return self.conn.recv()
        except (EOFError, OSError) as e:
            self.stop()
            raise WorkerGone(f"{self.name} died during the run ({e!r})") from e

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(60)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(10)
        self.proc = None


class LanePool:
    """`jobs` lanes, each a worker process keeping a cluster; `submit(test)` -> a future of the
    answer ({"run_dir", "seconds"} or {"error"})."""

    def __init__(self, root: Path, jobs: int = 1) -> None:
        self.root = Path(root) / "lanes"
        self.jobs = max(1, jobs)
        self._queue: queue.Queue[Any] = queue.Queue()
        self._workers = [_Worker(self.root, f"lane-{i + 1}") for i in range(self.jobs)]
        self._threads = [threading.Thread(target=self._drive, args=(w,), name=w.name, daemon=True)
                         for w in self._workers]
        for t in self._threads:
            t.start()

    def submit(self, test: ChaosTest) -> Future[dict[str, Any]]:
        future: Future[dict[str, Any]] = Future()
        self._queue.put((test, future))
        return future

    def _drive(self, worker: _Worker) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                worker.stop()
                return
            test, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result({**worker.run(test), "lane": worker.name})
            except Exception as e:  # noqa: BLE001 -- the future carries it
                future.set_exception(e)

    def close(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(120)
