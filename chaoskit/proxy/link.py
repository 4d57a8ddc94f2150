"""One direction of one proxied connection: read the source, pass the bytes through the toxic
chain, write them to the destination.

A reader task stamps each chunk with the time it arrived and queues it (bounded in bytes, so a
slowed link pushes back on the sender through TCP instead of buffering without end). A pump task
takes chunks in order and walks them down the chain. The chain is the live list of this link's
toxic runs, ordered by each toxic's `seq`; a chunk that leaves the toxic with seq s goes on to the
first run with a larger seq *in the list as it is then*. So a toxic added, changed or removed while
bytes are on their way takes effect at once and nothing buffered is lost: a toxic removed while it
holds a chunk (latency, bandwidth, slicer, slow_close) wakes up and lets the chunk go on; one
added goes last in the chain and sees every byte not yet written. The end of the stream travels
the chain as `None`, behind all the data.
"""
from __future__ import annotations

import asyncio
import random
from collections import deque

from chaoskit.proxy.behaviours import behaviour
from chaoskit.proxy.stage import Chunk, ConnectionEnds, ToxicRun
from chaoskit.proxy.toxics import Toxic

READ_SIZE = 64 * 1024
# bytes read but not yet written before the reader stops reading: enough for a 100 ms latency at
# ~80 MB/s, small enough that many slowed links do not eat the machine's memory
HIGH_WATER = 8 * 1024 * 1024


class ChunkQueue:
    """FIFO from reader to pump; `put` waits while more than `limit` bytes are queued."""

    def __init__(self, limit: int) -> None:
        self._items: deque[Chunk | None] = deque()
        self._bytes, self._limit = 0, limit
        self._readable, self._writable = asyncio.Event(), asyncio.Event()
        self._writable.set()

    async def put(self, chunk: Chunk) -> None:
        await self._writable.wait()
        self._items.append(chunk)
        self._bytes += len(chunk.data)
        self._readable.set()
        if self._bytes >= self._limit:
            self._writable.clear()

    def put_end(self) -> None:
        self._items.append(None)
        self._readable.set()

    async def get(self) -> Chunk | None:
        while not self._items:
            self._readable.clear()
            await self._readable.wait()
        chunk = self._items.popleft()
        if chunk is not None:
            self._bytes -= len(chunk.data)
            if self._bytes < self._limit:
                self._writable.set()
        return chunk


class Link:
    """upstream (client → server) or downstream (server → client) of one connection."""

    def __init__(self, conn: ConnectionEnds, direction: str, source: asyncio.StreamReader,
                 dest: asyncio.StreamWriter, rng: random.Random) -> None:
        self.conn, self.direction, self.source, self.dest, self.rng = conn, direction, source, dest, rng
        self.loop = asyncio.get_running_loop()
        self.runs: list[ToxicRun] = []
        self.queue = ChunkQueue(HIGH_WATER)

    # --- the chain, changed in place -----------------------------------------------------------
    def _find(self, toxic: Toxic) -> ToxicRun | None:
        return next((r for r in self.runs if r.toxic is toxic), None)

    def add(self, toxic: Toxic) -> None:
        run = ToxicRun(toxic, self.rng.random() < toxic.toxicity, self.loop)
        self.runs.append(run)
        if run.active:
            behaviour(toxic).start(self, run)

    def update(self, toxic: Toxic, toxicity_changed: bool) -> None:
        run = self._find(toxic)
        if run is None:
            return
        if run.active:
            behaviour(toxic).stop(self, run, removed=False)
        if toxicity_changed:
            run.active = self.rng.random() < toxic.toxicity
        if run.active:
            behaviour(toxic).start(self, run)
        run.interrupt()

    def remove(self, toxic: Toxic) -> None:
        run = self._find(toxic)
        if run is None:
            return
        self.runs.remove(run)
        run.removed = True
        run.interrupt()
        if run.active:
            behaviour(toxic).stop(self, run, removed=True)

    def halt(self) -> None:
        """The connection is gone: stop every timer and wake every sleep."""
        for run in self.runs:
            run.cancel_timer()
            run.interrupt()

    # --- the data path ---------------------------------------------------------------------------
    async def run(self) -> None:
        reader = asyncio.create_task(self._read())
        try:
            while not self.conn.closed:
                chunk = await self.queue.get()
                await self._forward(0, chunk)
                if chunk is None:
                    return
        finally:
            reader.cancel()

    async def _read(self) -> None:
        try:
            while data := await self.source.read(READ_SIZE):
                await self.queue.put(Chunk(data, self.loop.time()))
        except OSError:
            pass  # a reset source ends this direction as an end of stream would
        finally:
            self.queue.put_end()

    async def _forward(self, after: int, chunk: Chunk | None) -> None:
        """Pass `chunk` on to the first active toxic after seq `after`, or out to the destination."""
        while True:
            run = next((r for r in self.runs if r.toxic.seq > after), None)
            if run is None:
                await self._deliver(chunk)
                return
            if run.active:
                seq = run.toxic.seq
                await behaviour(run.toxic).feed(self, run, chunk, lambda c: self._forward(seq, c))
                return
            after = run.toxic.seq

    async def _deliver(self, chunk: Chunk | None) -> None:
        if self.conn.closed:
            return
        if chunk is None:
            self.conn.end_of_stream(self)
            return
        self.dest.write(chunk.data)
        try:
            await self.dest.drain()
        except OSError:
            self.conn.abort()
