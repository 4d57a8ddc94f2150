"""Time for the group coordinator: timestamps and one-shot timers, real or driven by a test.

Every deadline of the coordinator (session timeouts, rebalance timeouts, the initial rebalance
delay, the pending-sync timeout) is a timer from `Clock.call_later`, never a sleep, so a unit test
swaps `LoopClock` for `ManualClock` and moves time with `advance()`.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds, for timestamps that are stored or shown."""

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> Timer:
        """Run callback (a plain function, on the event loop's thread) after delay_ms."""


class LoopClock:
    """The real clock: asyncio's loop timers (monotonic) and time.time() for timestamps."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000.0, callback)


class ManualTimer:
    __slots__ = ("due_ms", "callback", "cancelled")

    def __init__(self, due_ms: float, callback: Callable[[], None]) -> None:
        self.due_ms, self.callback, self.cancelled = due_ms, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told: `advance(ms)` fires every timer due by then, in due order
    (ties in the order they were set), with now_ms() at each timer's due time as it fires."""

    def __init__(self, start_ms: int = 1_000_000) -> None:
        self._now = float(start_ms)
        self._heap: list[tuple[float, int, ManualTimer]] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return int(self._now)

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> ManualTimer:
        timer = ManualTimer(self._now + max(delay_ms, 0), callback)
        heapq.heappush(self._heap, (timer.due_ms, next(self._seq), timer))
        return timer

    def advance(self, ms: float) -> int:
        """Move time forward by ms; returns how many timers fired (timers they set fire too, if due)."""
        end = self._now + ms
        fired = 0
        while self._heap and self._heap[0][0] <= end:
            due, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self._now = max(self._now, due)
            timer.callback()
            fired += 1
        self._now = end
        return fired

    def pending(self) -> list[float]:
        """Due times (ms from now) of the timers not yet fired or cancelled, soonest first."""
        return sorted(t.due_ms - self._now for _, _, t in self._heap if not t.cancelled)
