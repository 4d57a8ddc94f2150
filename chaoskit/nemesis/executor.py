"""Plays a fault schedule against a clock, and heals every started fault however the run ends.

:func:`run_schedule` turns each window into a start op at ``start_s`` and a stop
op at ``stop_s`` (stops first when both fall on one instant, so back-to-back
windows of a fault never overlap), hands them to ``nemesis.invoke(test, op)`` and passes
the completed ops to ``record`` (the history recorder's append). It returns when
the schedule is done or ``stop`` is set. Its ``finally`` stops, newest first,
every window whose start was sent but whose stop was not -- including one whose
start raised, since its outcome is unknown -- whether the run ended normally,
early, or by an exception (even KeyboardInterrupt).

A nemesis that raises on an op does not end the run: the op is recorded with an
``error`` (indeterminate, type info) and the schedule goes on. A failed heal is
recorded too; after trying all of them, :class:`HealError` says which faults may
still be active (on top of any exception already ending the run, as a note).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable, Protocol

from chaoskit.history.schema import Op
from chaoskit.nemesis.ops import START, STOP, fault_op, with_error
from chaoskit.roles import Fault, LiveRun, Nemesis

Record = Callable[[Op], Any]


class Clock(Protocol):
    """Seconds since the run began, and waiting for a moment unless stopped first."""

    def now(self) -> float: ...

    def wait_until(self, t: float, stop: threading.Event) -> bool:
        """Block until ``now() >= t`` (True) or ``stop`` is set (False)."""


class MonotonicClock:
    """The real clock: ``time.monotonic`` from construction (the run's start)."""

    def __init__(self) -> None:
        self._zero = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._zero

    def wait_until(self, t: float, stop: threading.Event) -> bool:
        while not stop.is_set():
            remaining = t - self.now()
            if remaining <= 0:
                return True
            stop.wait(remaining)  # wakes early when the run is stopped
        return False


class HealError(RuntimeError):
    """Some faults could not be healed; the cluster may still be broken."""


def run_schedule(
    nemesis: Nemesis,
    windows: Iterable[Fault],
    record: Record,
    clock: Clock | None = None,
    stop: threading.Event | None = None,
    test: LiveRun | None = None,
) -> None:
    """Start and stop each window's fault on time; heal whatever is active on the way out."""
    clock = clock or MonotonicClock()
    stop = stop or threading.Event()
    active: dict[int, Fault] = {}  # window id -> window, in start order
    ending: BaseException | None = None
    try:
        for t, f, window in _events(windows):
            if not clock.wait_until(t, stop):
                break
            if f == START:
                active[window.id] = window  # before invoking: a start that raises may still have broken something
            else:
                active.pop(window.id, None)
            _invoke(nemesis, test, fault_op(f, window), record)
    except BaseException as exc:
        ending = exc
        raise
    finally:
        _heal_all(nemesis, test, list(active.values()), record, ending)


def _events(windows: Iterable[Fault]) -> list[tuple[float, str, Fault]]:
    events = []
    for w in windows:
        if not w.start_s < w.stop_s:
            raise ValueError(f"window {w.id} ({w.name}) must start before it stops, got {w.start_s}..{w.stop_s}")
        events += [(w.start_s, 1, START, w), (w.stop_s, 0, STOP, w)]
    events.sort(key=lambda e: (e[0], e[1], e[3].id))
    return [(t, f, w) for t, _, f, w in events]


def _invoke(nemesis: Nemesis, test: LiveRun | None, op: Op, record: Record) -> bool:
    """Invoke and record one op; False when the nemesis raised (the op is recorded with the error)."""
    try:
        done = nemesis.invoke(test, op)
    except Exception as exc:  # noqa: BLE001 -- the outcome is unknown: an info op with the error
        record(with_error(op, exc))
        return False
    record(done)
    return True


def _heal_all(nemesis: Nemesis, test: LiveRun | None, active: list[Fault], record: Record,
              ending: BaseException | None) -> None:
    failed: list[str] = []
    for window in reversed(active):
        try:
            healed = _invoke(nemesis, test, fault_op(STOP, window), record)
        except Exception as exc:  # noqa: BLE001 -- record() itself failed; keep healing the others
            healed = False
            failed.append(f"window {window.id} {window.name} on {window.target} (recording failed: {exc})")
            continue
        if not healed:
            failed.append(f"window {window.id} {window.name} on {window.target}")
    if failed:
        error = HealError("could not heal, the cluster may still be faulted: " + "; ".join(failed))
        if ending is None:
            raise error
        ending.add_note(str(error))
