"""One proxied TCP connection: the client's socket, the upstream socket, and a link each way.

Ways it ends:
- both directions reached their end of stream (each end is passed on as a half close, so a
  request-then-FIN client still gets its answer): `close()`;
- a toxic closes it (timeout, limit_data) or a write fails: `close()` writes out what was already
  passed on, then FIN both ways (`abort()` after LINGER seconds if a peer will not read);
- the proxy is disabled or deleted: `abort()`, at once, both ways;
- reset_peer: `reset()`, SO_LINGER 0 then close, so both peers read ECONNRESET.
"""
from __future__ import annotations

import asyncio
import logging
import random
import socket
import struct

from chaoskit.proxy.link import Link
from chaoskit.proxy.toxics import Toxic

log = logging.getLogger("chaoskit.proxy")
LINGER = 10.0  # seconds a closed connection may take to hand its last bytes to a peer


def set_nodelay(writer: asyncio.StreamWriter) -> None:
    """Small writes go out at once, as Go's sockets do by default (slicer's pieces stay pieces)."""
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Connection:
    def __init__(self, label: str, client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                 upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                 toxics: dict[str, list[Toxic]], seed: str) -> None:
        self.label = label
        self.closed = False
        self.writers = (client[1], upstream[1])
        # each direction draws toxicity, jitter and slice sizes from its own seeded stream
        self.links = {
            "upstream": Link(self, "upstream", client[0], upstream[1], random.Random(f"{seed}/upstream")),
            "downstream": Link(self, "downstream", upstream[0], client[1], random.Random(f"{seed}/downstream")),
        }
        for direction, chain in toxics.items():
            for toxic in chain:
                self.links[direction].add(toxic)
        self._ended: set[str] = set()
        self._tasks: list[asyncio.Task[None]] = []

    async def run(self) -> None:
        self._tasks = [asyncio.create_task(link.run()) for link in self.links.values()]
        try:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        finally:
            self.close()

    def end_of_stream(self, link: Link) -> None:
        """`link`'s source ended and every byte before the end is written: half close its destination."""
        self._ended.add(link.direction)
        if len(self._ended) == 2:
            self.close()
            return
        try:
            if link.dest.can_write_eof():
                link.dest.write_eof()
        except OSError:
            self.abort()

    def close(self) -> None:
        if self._finish():
            loop = asyncio.get_running_loop()
            for writer in self.writers:
                writer.close()
                loop.call_later(LINGER, writer.transport.abort)
            log.debug("%s closed", self.label)

    def abort(self) -> None:
        if self._finish():
            for writer in self.writers:
                writer.transport.abort()
            log.debug("%s dropped", self.label)

    def reset(self) -> None:
        if not self.closed:
            for writer in self.writers:
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            log.debug("%s reset", self.label)
        self.abort()

    def _finish(self) -> bool:
        """Mark closed and stop both links; False if it already was."""
        if self.closed:
            return False
        self.closed = True
        current = asyncio.current_task()
        for link in self.links.values():
            link.halt()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        return True
