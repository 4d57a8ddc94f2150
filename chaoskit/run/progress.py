"""The live progress line of a run on the terminal (rich): time, ops, undelivered acknowledged writes."""
from __future__ import annotations

import threading
from typing import Any

from chaoskit.run.chaostest import ChaosTest
from chaoskit.run.workers import WorkerPool


class ProgressLine:
    """A live line on the terminal (rich) for runs longer than a few seconds: time, ops, faults."""

    def __init__(self, enabled: bool, test: ChaosTest, pool: WorkerPool, clock: Any) -> None:
        self.enabled = enabled and test.duration_s >= 5
        self.test, self.pool, self.clock = test, pool, clock
        self._live: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressLine:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
            self._live = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                                  TextColumn("{task.fields[ops]} ops, {task.fields[undelivered]} undelivered"),
                                  console=Console(stderr=True), transient=True)
            self._live.start()
            task = self._live.add_task(f"{self.test.name} [{self.test.profile}]", total=self.test.duration_s,
                                       ops=0, undelivered=0)
            self._thread = threading.Thread(target=self._tick, args=(task,), daemon=True)
            self._thread.start()
        return self

    def _tick(self, task: Any) -> None:
        while not self._stop.wait(0.5):
            self._live.update(task, completed=min(self.clock.now(), self.test.duration_s), ops=self.pool.ops,
                              undelivered=self.pool.undelivered)

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._live is not None:
            self._live.stop()
