"""What each toxic type does to the bytes of one link (the facts are Toxiproxy's, see docs/faults.md).

A behaviour gets every chunk that reaches its place in the chain (`data`) and the end of the
stream (`end`), with an `emit` that passes a chunk (or the end, `None`) on down the chain. `start` runs when the toxic begins to
act on a link (the link opens, or the toxic is added to a live link); `stop` when it ends (removed,
or changed: then `start` follows). Nothing here drops bytes except where the toxic says so
(timeout, limit_data, reset_peer); a toxic removed while it holds bytes passes them on.
"""
from __future__ import annotations

import random

from chaoskit.proxy.stage import Chunk, Emit, LinkEnds, ToxicRun
from chaoskit.proxy.toxics import TOXIC_TYPES, Toxic


class Behaviour:
    """noop: every byte passes untouched."""

    def start(self, link: LinkEnds, run: ToxicRun) -> None:
        pass

    def stop(self, link: LinkEnds, run: ToxicRun, removed: bool) -> None:
        pass

    async def feed(self, link: LinkEnds, run: ToxicRun, chunk: Chunk | None, emit: Emit) -> None:
        if chunk is None:
            await self.end(link, run, emit)
        else:
            await self.data(link, run, chunk, emit)

    async def data(self, link: LinkEnds, run: ToxicRun, chunk: Chunk, emit: Emit) -> None:
        await emit(chunk)

    async def end(self, link: LinkEnds, run: ToxicRun, emit: Emit) -> None:
        await emit(None)


class Latency(Behaviour):
    """Each chunk is held until `latency` ± `jitter` ms after it was read (uniform jitter)."""

    async def data(self, link: LinkEnds, run: ToxicRun, chunk: Chunk, emit: Emit) -> None:
        spread = link.rng.random() * 2 - 1  # drawn once per chunk, scaled by the jitter in force

        def due() -> float:
            t = run.toxic
            return chunk.ts + max(0.0, t.attr("latency") + spread * t.attr("jitter")) / 1000

        # the next toxic counts from when this one released the chunk (two latencies add up)
        chunk.ts = due() if await run.wait_until(due) else link.loop.time()
        await emit(chunk)


class Bandwidth(Behaviour):
    """At most `rate` KB/s (1 KB = 1000 bytes), sent in pieces of at most 100 ms worth."""

    async def data(self, link: LinkEnds, run: ToxicRun, chunk: Chunk, emit: Emit) -> None:
        data = chunk.data
        while data:
            rate = run.toxic.attr("rate") * 1000  # bytes per second
            if rate <= 0 or run.bypassed:
                await emit(Chunk(data, chunk.ts))
                return
            piece = data[: max(1, rate // 10)]
            # the link is busy until `free_at`; idle time earns no credit, so there is no burst
            begin = max(run.state.get("free_at", 0.0), link.loop.time())
            free_at = begin + len(piece) / rate
            if await run.sleep(free_at - link.loop.time()):
                run.state["free_at"] = free_at
                await emit(Chunk(piece, chunk.ts))
                data = data[len(piece):]
            # woken early: the rate changed or the toxic went; the loop looks again


class SlowClose(Behaviour):
    """The end of the stream (the close) is held for `delay` ms; data passes untouched."""

    async def end(self, link: LinkEnds, run: ToxicRun, emit: Emit) -> None:
        begin = link.loop.time()
        await run.wait_until(lambda: begin + run.toxic.attr("delay") / 1000)
        await emit(None)


class Timeout(Behaviour):
    """Data is dropped; the connection closes after `timeout` ms, or never when it is 0.

    Removing the toxic closes the connections it acted on, as Toxiproxy does: bytes were dropped
    in the middle of the stream, so the stream cannot go on.
    """

    def start(self, link: LinkEnds, run: ToxicRun) -> None:
        ms = run.toxic.attr("timeout")
        if ms > 0:
            run.timer = link.loop.call_later(ms / 1000, link.conn.close)

    def stop(self, link: LinkEnds, run: ToxicRun, removed: bool) -> None:
        run.cancel_timer()
        if removed:
            link.conn.close()

    async def data(self, link: LinkEnds, run: ToxicRun, chunk: Chunk, emit: Emit) -> None:
        pass  # dropped


class ResetPeer(Behaviour):
    """On the first bytes (or the end of stream), wait `timeout` ms, then reset the connection:
    both sockets close with SO_LINGER 0, so both peers read ECONNRESET."""

    async def feed(self, link: LinkEnds, run: ToxicRun, chunk: Chunk | None, emit: Emit) -> None:
        begin = link.loop.time()
        if await run.wait_until(lambda: begin + run.toxic.attr("timeout") / 1000):
            link.conn.reset()
            return
        await emit(chunk)  # removed before it fired: the bytes go on


def slice_bounds(length: int, average: int, variation: int, rng: random.Random) -> list[int]:
    """Cut points 0 = b0 < b1 < ... < bn = length: halve until a piece is at most average + variation,
    moving each cut by up to ±variation (Toxiproxy's slicer, with pieces never empty)."""
    cuts = [0]
    stack = [(0, length)]
    limit = max(average, 1) + variation
    while stack:
        start, end = stack.pop()
        if end - start <= limit:
            cuts.append(end)
            continue
        mid = start + (end - start) // 2
        if variation > 0:
            mid += rng.randrange(-variation, variation)
        mid = min(max(mid, start + 1), end - 1)
        stack.append((mid, end))  # right half popped after the left: cuts stay in order
        stack.append((start, mid))
    return cuts


class Slicer(Behaviour):
    """Each chunk goes out as pieces of about `average_size` (± `size_variation`) bytes, with
    `delay` µs between pieces."""

    async def data(self, link: LinkEnds, run: ToxicRun, chunk: Chunk, emit: Emit) -> None:
        t = run.toxic
        cuts = slice_bounds(len(chunk.data), t.attr("average_size"), t.attr("size_variation"), link.rng)
        for i in range(1, len(cuts)):
            await emit(Chunk(chunk.data[cuts[i - 1]:cuts[i]], chunk.ts))
            if i == len(cuts) - 1:
                break
            begin = link.loop.time()
            if not await run.wait_until(lambda: begin + run.toxic.attr("delay") / 1e6):
                await emit(Chunk(chunk.data[cuts[i]:], chunk.ts))  # removed: the rest in one piece
                return


class LimitData(Behaviour):
    """The first `bytes` bytes pass (counted per link), then the connection closes."""

    async def data(self, link: LinkEnds, run: ToxicRun, chunk: Chunk, emit: Emit) -> None:
        limit, sent = run.toxic.attr("bytes"), run.state.get("sent", 0)
        part = chunk.data[: max(0, limit - sent)]
        if part:
            run.state["sent"] = sent + len(part)
            await emit(Chunk(part, chunk.ts))
        if run.state.get("sent", 0) >= limit:
            link.conn.close()


BEHAVIOURS: dict[str, Behaviour] = {
    "noop": Behaviour(),
    "latency": Latency(),
    "bandwidth": Bandwidth(),
    "slow_close": SlowClose(),
    "timeout": Timeout(),
    "reset_peer": ResetPeer(),
    "slicer": Slicer(),
    "limit_data": LimitData(),
}
assert set(BEHAVIOURS) == set(TOXIC_TYPES), "every toxic type the API accepts needs a behaviour"


def behaviour(toxic: Toxic) -> Behaviour:
    return BEHAVIOURS[toxic.type]
