"""PeerClient: an asyncio connection from this broker to another (follower fetches, truncation).

One request at a time, as the fetcher uses it. Any failure closes the connection, since its stream
position is then unknown; the next request reconnects.
"""
from __future__ import annotations

import asyncio
import itertools
import struct

from kafka.protocol.api_message import ApiMessage

from chaoskit.protocol.framing import FrameError, read_frame
from chaoskit.protocol.registry import response_class

_CORRELATION = struct.Struct(">i")


class PeerError(Exception):
    """The exchange with a peer broker failed; the message names the peer."""


class PeerClient:
    def __init__(self, address: tuple[str, int], client_id: str, max_frame_bytes: int = 100 * 1024 * 1024) -> None:
        self.address = address
        self.client_id = client_id
        self.max_frame_bytes = max_frame_bytes
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"PeerClient({self.address[0]}:{self.address[1]})"

    async def close(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except (OSError, asyncio.CancelledError):
                pass

    async def request(self, request: ApiMessage, version: int, timeout: float) -> ApiMessage:
        try:
            return await asyncio.wait_for(self._request(request, version), timeout)
        except asyncio.TimeoutError as e:
            await self.close()
            raise PeerError(f"no answer from {self.address[0]}:{self.address[1]} within {timeout:.1f}s") from e
        except (OSError, ValueError, FrameError, struct.error) as e:
            await self.close()
            raise PeerError(f"{self.address[0]}:{self.address[1]}: {e!r}") from e

    async def _request(self, request: ApiMessage, version: int) -> ApiMessage:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(*self.address)
        assert self._reader is not None
        correlation_id = next(self._ids) & 0x7FFFFFFF
        request.API_VERSION = version
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        self._writer.write(bytes(request.encode(header=True, framed=True)))
        await self._writer.drain()
        payload = await read_frame(self._reader, self.max_frame_bytes)
        if payload is None:
            raise ValueError("the peer closed the connection")
        (got,) = _CORRELATION.unpack_from(payload)
        if got != correlation_id:
            raise ValueError(f"answered correlation id {got} to request {correlation_id}")
        return response_class(request.API_KEY, version).decode(payload, version=version, header=True)
