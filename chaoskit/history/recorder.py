"""Recorder: the run's history as JSON lines, appended from many threads, durable in small batches.

`record(op)` stamps `index` (record order) and `time_ns` (one monotonic clock from the recorder's
start) under a lock and writes the line straight to the file (the OS has it at once, so a killed
runner process loses nothing already written). A background flusher fsyncs every FLUSH_OPS ops or
FLUSH_S seconds, whichever comes first, so a crash of the machine loses at most that window;
`close()` writes and fsyncs the rest.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

FLUSH_OPS, FLUSH_S = 64, 0.05


class Recorder:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 -- closed by close()
        self._lock = threading.Lock()
        self._began = time.monotonic_ns()
        self.began_wall = time.time()  # the wall clock at time_ns 0: node logs' times line up with the ops'
        self._next = 0
        self._unsynced = 0
        self._wake = threading.Event()
        self._closed = False
        self._flusher = threading.Thread(target=self._flush_loop, name="history-flusher", daemon=True)
        self._flusher.start()

    def record(self, op: dict[str, Any]) -> dict[str, Any]:
        """Stamp and append one op; returns the stamped op (a copy: the caller's dict is untouched)."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"recording to {self.path} after close()")
            stamped = dict(op)
            stamped.setdefault("index", self._next)
            stamped.setdefault("time_ns", time.monotonic_ns() - self._began)
            self._next += 1
            line = json.dumps(stamped, separators=(",", ":"), ensure_ascii=False, default=str)
            self._file.write(line + "\n")
            self._file.flush()  # into the kernel now: survives SIGKILL of this process
            self._unsynced += 1
            if self._unsynced >= FLUSH_OPS:
                self._wake.set()
        return stamped

    def _sync(self) -> None:
        with self._lock:
            if self._closed or not self._unsynced:
                return
            self._unsynced = 0
            fd = self._file.fileno()
        os.fsync(fd)  # outside the lock: recording goes on while the disk catches up

    def _flush_loop(self) -> None:
        while not self._closed:
            self._wake.wait(FLUSH_S)
            self._wake.clear()
            try:
                self._sync()
            except (OSError, ValueError):  # closed underneath us: close() syncs the rest
                return

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._file.flush()
            os.fsync(self._file.fileno())
            self._closed = True
            self._file.close()
        self._wake.set()
        self._flusher.join(1)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
