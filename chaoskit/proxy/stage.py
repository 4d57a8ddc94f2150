"""What a toxic behaviour works with: a chunk of bytes, the toxic's run on one link, and what it
may touch of the link and its connection (`LinkEnds`, `ConnectionEnds`: link.py's Link and
connection.py's Connection are both, so behaviours.py and link.py need neither file's insides).

A run can sleep, and every sleep wakes early when the toxic is changed or removed, which is how a
toxic taken off a live link lets the bytes it holds go on at once.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
import random
from typing import Any, Protocol

from chaoskit.proxy.toxics import Toxic


@dataclass(slots=True)
class Chunk:
    data: bytes
    ts: float  # when it was read (loop clock); a latency toxic moves it on to when it came due


Emit = Callable[["Chunk | None"], Awaitable[None]]


class ConnectionEnds(Protocol):
    """One proxied connection as its links and their toxics end it."""

    closed: bool

    def end_of_stream(self, link: Any) -> None: ...  # the link whose source ended
    def close(self) -> None: ...  # both ways, once the bytes written are handed on
    def abort(self) -> None: ...  # both ways at once
    def reset(self) -> None: ...  # a TCP reset to both peers


class LinkEnds(Protocol):
    """One direction of a connection as a toxic's behaviour sees it."""

    conn: ConnectionEnds
    loop: asyncio.AbstractEventLoop
    rng: random.Random


class ToxicRun:
    """One toxic as applied to one link: whether toxicity drew it active here, and its state."""

    def __init__(self, toxic: Toxic, active: bool, loop: asyncio.AbstractEventLoop) -> None:
        self.toxic, self.active, self.loop = toxic, active, loop
        self.removed = False
        self.state: dict[str, Any] = {}
        self.timer: asyncio.TimerHandle | None = None
        self._sleepers: set[asyncio.Future[bool]] = set()

    @property
    def bypassed(self) -> bool:
        """Removed, or drawn inactive by a toxicity change: held bytes go on at once."""
        return self.removed or not self.active

    def interrupt(self) -> None:
        """Wake every sleep of this run: the toxic was changed or removed."""
        for fut in self._sleepers:
            if not fut.done():
                fut.set_result(False)

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    async def sleep(self, seconds: float) -> bool:
        """Sleep; True if the whole time passed, False if the toxic changed or went meanwhile."""
        if seconds <= 0:
            return True
        fut: asyncio.Future[bool] = self.loop.create_future()
        handle = self.loop.call_later(seconds, _resolve, fut)
        self._sleepers.add(fut)
        try:
            return await fut
        finally:
            handle.cancel()
            self._sleepers.discard(fut)

    async def wait_until(self, due: Callable[[], float]) -> bool:
        """Sleep until `due()` (read again after each change of the toxic); False if it was bypassed."""
        while not self.bypassed:
            if await self.sleep(due() - self.loop.time()):
                return True
        return False


def _resolve(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(True)
