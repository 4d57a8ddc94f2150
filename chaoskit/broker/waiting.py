"""Signal: wake every asyncio task waiting for "something changed" (new data, a moved high watermark,
fresh metadata), and wait_for: poll a condition each time a signal fires, up to a timeout.

Long-poll fetches, acks=all produces and admin requests waiting on the metadata cache all wait this
way instead of sleeping.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable


class Signal:
    __slots__ = ("_future",)

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None

    def fire(self) -> None:
        """Wake every current waiter; later waiters wait for the next fire."""
        future, self._future = self._future, None
        if future is not None and not future.done():
            future.set_result(None)

    def future(self) -> asyncio.Future[None]:
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return self._future


async def wait_any(signals: Iterable[Signal], timeout: float) -> bool:
    """True when one of the signals fired within timeout seconds."""
    futures = {s.future() for s in signals}
    if not futures or timeout <= 0:
        return False
    done, _ = await asyncio.wait(futures, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    return bool(done)


async def wait_for(condition: Callable[[], bool], signals: Iterable[Signal], timeout: float) -> bool:
    """Re-check condition whenever a signal fires; True once it holds, False when timeout passes first."""
    signals = list(signals)
    deadline = time.monotonic() + timeout
    while not condition():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        await wait_any(signals, left)
    return True
