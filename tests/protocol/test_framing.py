"""Framing: whole frames, clean EOF, truncation and oversize are told apart."""
import asyncio
import struct

import pytest

from chaoskit.protocol.framing import FrameTooLarge, NegativeFrameSize, TruncatedFrame, frame, read_frame


def read_all(data: bytes, max_bytes: int = 1000) -> list:
    async def go():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        out = []
        while (f := await read_frame(reader, max_bytes)) is not None:
            out.append(f)
        return out
    return asyncio.run(go())


def test_frames_then_clean_eof():
    assert read_all(frame(b"abc") + frame(b"") + frame(b"xy")) == [b"abc", b"", b"xy"]


def test_eof_inside_size_prefix():
    with pytest.raises(TruncatedFrame, match="expected 4 bytes, got 2"):
        read_all(frame(b"abc") + b"\x00\x00")


def test_eof_inside_payload():
    with pytest.raises(TruncatedFrame, match="expected 10 bytes, got 3"):
        read_all(struct.pack(">i", 10) + b"abc")


def test_oversize_refused_before_reading():
    with pytest.raises(FrameTooLarge, match="1001 bytes is over the limit of 1000"):
        read_all(struct.pack(">i", 1001))


def test_negative_size():
    with pytest.raises(NegativeFrameSize):
        read_all(struct.pack(">i", -5))
