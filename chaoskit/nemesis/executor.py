"""Plays a fault schedule against a clock, and heals every started fault however the run ends.

:func:`run_schedule` turns each window into a start op at ``start_s`` and a stop
op at ``stop_s`` (stops first when both fall on one instant, so back-to-back
windows of a fault never overlap), hands them to ``nemesis.invoke(test, op)`` and passes
the completed ops to ``record`` (the history recorder's append). It returns when
the schedule is done or ``stop`` is set. Its ``finally`` stops, newest first,
every window whose start was sent but whose stop was not -- including one whose
start raised, since its outcome is unknown -- whether the run ended normally,
early, or by an exception (even KeyboardInterrupt).

Each fault name plays in a lane of its own (a thread, ops in schedule order), so a step
that waits on the cluster -- an admin step waiting for records, a staged story, a restart
waiting for its node -- delays only later ops of that fault, never another fault's window:
an isolation due to end at 3 s ends at 3 s while an expansion is still retrying. When ops
return at once, the executor waits for each before the next, so their order is the schedule's.

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
    events = _events(windows)
    lanes = _Lanes(nemesis, test, record)
    ending: BaseException | None = None
    try:
        for i, (t, f, window) in enumerate(events):
            if not clock.wait_until(t, stop):
                break
            played = lanes.play(f, window)
            due = events[i + 1][0] if i + 1 < len(events) else float("inf")
            _wait_played(played, clock, due, stop)
            lanes.raise_interrupt()
        else:
            lanes.drain()  # the schedule is done: let every queued stop play
            lanes.raise_interrupt()
    except BaseException as exc:
        ending = exc
        raise
    finally:
        # ops still queued are dropped; the windows started are healed, those whose op is still
        # playing once it returns (a heal may be what that op waits for)
        lanes.close()
        idle = lanes.active(idle=True)
        failed = _heal(nemesis, test, idle, record)
        lanes.join()
        rest = [w for w in lanes.active() if w not in idle]
        _report(failed + _heal(nemesis, test, rest, record), ending)


def _wait_played(played: threading.Event, clock: Clock, due: float, stop: threading.Event) -> None:
    """Until the op has played or the next op is due (so ops that return at once keep the
    schedule's order, and one that blocks holds back nothing but its own lane)."""
    while not played.is_set() and not stop.is_set():
        remaining = due - clock.now()
        if remaining <= 0:
            return
        played.wait(min(remaining, 0.05))


class _Lanes:
    """A thread per fault name playing that fault's ops in order; tracks the windows started."""

    def __init__(self, nemesis: Nemesis, test: LiveRun | None, record: Record) -> None:
        self.nemesis, self.test, self.record = nemesis, test, record
        self._lock = threading.Lock()
        self._queues: dict[str, list[tuple[str, Fault, threading.Event]]] = {}
        self._wakes: dict[str, threading.Condition] = {}
        self._threads: list[threading.Thread] = []
        self._active: dict[int, Fault] = {}  # window id -> window, in start order
        self._playing: set[int] = set()
        self._closed = False
        self._interrupt: BaseException | None = None

    def play(self, f: str, window: Fault) -> threading.Event:
        played = threading.Event()
        with self._lock:
            if window.name not in self._queues:
                self._queues[window.name] = []
                self._wakes[window.name] = threading.Condition(self._lock)
                lane = threading.Thread(target=self._run, args=(window.name,), daemon=True,
                                        name=f"nemesis-{window.name}")
                self._threads.append(lane)
                lane.start()
            self._queues[window.name].append((f, window, played))
            self._wakes[window.name].notify()
        return played

    def _run(self, name: str) -> None:
        queue, wake = self._queues[name], self._wakes[name]
        while True:
            with self._lock:
                while not queue and not self._closed:
                    wake.wait()
                if not queue:
                    return
                f, window, played = queue.pop(0)
                if f == START:
                    self._active[window.id] = window  # before invoking: a start that raises may still have broken something
                else:
                    self._active.pop(window.id, None)
                self._playing.add(window.id)
            try:
                _invoke(self.nemesis, self.test, fault_op(f, window), self.record)
            except BaseException as exc:  # noqa: BLE001 -- e.g. KeyboardInterrupt: the run ends, on the main thread
                with self._lock:
                    self._interrupt = self._interrupt or exc
                    for _, _, waiting in queue:
                        waiting.set()
                    queue.clear()
            finally:
                with self._lock:
                    self._playing.discard(window.id)
                played.set()

    def raise_interrupt(self) -> None:
        if self._interrupt is not None:
            raise self._interrupt

    def drain(self) -> None:
        """Wait until every queued op has played."""
        for played in [p for queue in self._queues.values() for _, _, p in list(queue)]:
            played.wait()

    def close(self) -> None:
        """Drop what is queued; each lane ends once its playing op returns."""
        with self._lock:
            self._closed = True
            for name, queue in self._queues.items():
                for _, _, played in queue:
                    played.set()
                queue.clear()
                self._wakes[name].notify_all()

    def join(self) -> None:
        for lane in self._threads:
            lane.join()

    def active(self, idle: bool = False) -> list[Fault]:
        """The windows started and not stopped (`idle`: only those with no op playing)."""
        with self._lock:
            return [w for w in self._active.values() if not (idle and w.id in self._playing)]


def _events(windows: Iterable[Fault]) -> list[tuple[float, str, Fault]]:
    events = []
    for w in windows:
        if not w.start_s < w.stop_s:
            raise ValueError(f"window {w.id} ({w.name}) must start before it stops, got {w.start_s}..{w.stop_s}")
        events += [(w.start_s, 1, START, w), (w.stop_s, 0, STOP, w)]
    events.sort(key=lambda e: (e[0], e[1], e[3].id))
    return [(t, f, w) for t, _, f, w in events]


def _invoke(nemesis: Nemesis, test: LiveRun | None, op: Op, record: Record) -> bool:
    """Invoke and record one op; False when the nemesis raised (the op is recorded with the error).
    The op is recorded once done; its value's `took_s` says how long before that it began (an
    expansion's clients may write to the new partitions before its start is recorded)."""
    began = time.monotonic()
    try:
        done = nemesis.invoke(test, op)
    except Exception as exc:  # noqa: BLE001 -- the outcome is unknown: an info op with the error
        record(with_error(op, exc))
        return False
    if isinstance(done.get("value"), dict):
        done = {**done, "value": {**done["value"], "took_s": round(time.monotonic() - began, 3)}}
    record(done)
    return True


def _heal(nemesis: Nemesis, test: LiveRun | None, active: list[Fault], record: Record) -> list[str]:
    """Stop each window, newest first; the ones that could not be healed."""
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
    return failed


def _report(failed: list[str], ending: BaseException | None) -> None:
    if failed:
        error = HealError("could not heal, the cluster may still be faulted: " + "; ".join(failed))
        if ending is None:
            raise error
        ending.add_note(str(error))
