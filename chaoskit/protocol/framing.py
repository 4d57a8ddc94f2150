"""Kafka's size-prefixed framing: every request and response is an int32 length, then that many bytes."""
from __future__ import annotations

import asyncio
import struct

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The byte stream cannot be split into frames; the connection must be closed."""


class FrameTooLarge(FrameError):
    def __init__(self, size: int, max_bytes: int) -> None:
        self.size, self.max_bytes = size, max_bytes
        super().__init__(f"frame of {size} bytes is over the limit of {max_bytes} bytes "
                         "(raise the limit or send smaller requests)")


class NegativeFrameSize(FrameError):
    def __init__(self, size: int) -> None:
        self.size = size
        super().__init__(f"frame size {size} is negative: the peer does not speak the Kafka protocol")


class TruncatedFrame(FrameError):
    def __init__(self, expected: int, got: int) -> None:
        self.expected, self.got = expected, got
        super().__init__(f"connection closed inside a frame: expected {expected} bytes, got {got}")


def frame(payload: bytes) -> bytes:
    """Prefix a payload with its int32 size."""
    return _SIZE.pack(len(payload)) + payload


def frame_size(prefix: bytes, max_bytes: int) -> int:
    """Checked payload size from a 4-byte prefix."""
    (size,) = _SIZE.unpack(prefix)
    if size < 0:
        raise NegativeFrameSize(size)
    if size > max_bytes:
        raise FrameTooLarge(size, max_bytes)
    return size


async def _read_exactly(reader: asyncio.StreamReader, n: int) -> tuple[bytes, bool]:
    """(bytes, complete): a short read means the peer closed."""
    try:
        return await reader.readexactly(n), True
    except asyncio.IncompleteReadError as e:
        return e.partial, False


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> bytes | None:
    """The next frame's payload, or None when the peer closed cleanly between frames."""
    prefix, complete = await _read_exactly(reader, 4)
    if not complete:
        if not prefix:
            return None
        raise TruncatedFrame(4, len(prefix))
    size = frame_size(prefix, max_bytes)
    payload, complete = await _read_exactly(reader, size)
    if not complete:
        raise TruncatedFrame(size, len(payload))
    return payload
