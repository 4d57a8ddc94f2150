"""Waiting on conditions: poll with a timeout, never sleep blindly; a timeout names the node and attaches its log."""
from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class NotReady(Exception):
    """A condition did not hold within its timeout; the message carries the tail of the node's log."""


def log_tail(path: Path | None, lines: int = 40) -> str:
    """The last lines of a log file, or a note saying why there are none."""
    if path is None:
        return "(no log)"
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(f.tell() - 64 * 1024, 0))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"(cannot read {path}: {e})"
    return "\n".join(text.splitlines()[-lines:]) or f"({path} is empty)"


def wait_for(condition: Callable[[], T | None], timeout: float, what: str | Callable[[], str],
             log: Path | None = None, interval: float = 0.05,
             abort: Callable[[], str | None] | None = None) -> T:
    """Poll `condition` until it returns something truthy and return it.

    `what` names the condition in the timeout error (a callable is asked at that moment, so it can
    describe the state reached). `abort` is checked on each round: a string it returns (say, "process exited with 1") ends the
    wait at once instead of letting it run into the timeout.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = condition()
        except Exception as e:  # the condition's own failure is a "not yet"; keep the last for the message
            result, last_error = None, e
        if result:
            return result
        reason = abort() if abort else None
        if reason or time.monotonic() >= deadline:
            why = reason or f"not within {timeout:.1f}s"
            extra = f" (last error: {last_error!r})" if last_error else ""
            name = what() if callable(what) else what
            raise NotReady(f"{name}: {why}{extra}\n--- {log} ---\n{log_tail(log)}")
        time.sleep(interval)


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel just gave out on `host`; callers retry on "address in use" since it may be taken again."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
