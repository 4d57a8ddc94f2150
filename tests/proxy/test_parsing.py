"""Unit checks of the pure parts: addresses, toxic specs, slicing, and HTTP encoding."""
from __future__ import annotations

import random

import pytest

from chaoskit.proxy.addresses import canonical, split_host_port
from chaoskit.proxy.behaviours import slice_bounds
from chaoskit.proxy.errors import ApiError
from chaoskit.proxy.http_server import Response, encode_response
from chaoskit.proxy.toxics import Toxic, parse_attributes, parse_new_toxic, parse_update


@pytest.mark.parametrize("text,expected", [
    ("127.0.0.1:8474", ("127.0.0.1", 8474)), ("localhost:0", ("localhost", 0)), (":9000", ("", 9000)),
    ("[::1]:7070", ("::1", 7070)),
])
def test_split_host_port(text, expected):
    assert split_host_port(text) == expected


@pytest.mark.parametrize("text,error", [
    ("local373", "missing port"), ("1.2.3.4:http", "invalid port"), ("h:70000", "invalid port"),
    ("::1:80", "too many colons"), ("[::1]", "missing port"),
])
def test_bad_addresses(text, error):
    with pytest.raises(ValueError, match=error):
        split_host_port(text)


def test_canonical_resolves_names_as_the_listener_reports_them():
    assert canonical("localhost:7070") == "127.0.0.1:7070"
    assert canonical("") == "127.0.0.1:0"  # an empty listen address means loopback here


def test_new_toxic_defaults_and_order_of_checks():
    toxic = parse_new_toxic({"type": "latency"})
    assert (toxic.name, toxic.stream, toxic.toxicity) == ("latency_downstream", "downstream", 1.0)
    assert parse_new_toxic({"type": "noop", "stream": "UpStream"}).direction == "upstream"
    with pytest.raises(ApiError, match="stream was invalid"):
        parse_new_toxic({"type": "walrus", "stream": "sideways"})  # the stream is checked before the type
    with pytest.raises(ApiError, match="invalid toxic type"):
        parse_new_toxic({"stream": "upstream"})


def test_attributes_default_to_zero_and_update_in_part():
    assert parse_attributes("slicer", None) == {"average_size": 0, "size_variation": 0, "delay": 0}
    assert parse_attributes("latency", {"latency": 100.0}) == {"latency": 100, "jitter": 0}
    toxic = Toxic("l", "latency", "downstream", 1.0, {"latency": 100, "jitter": 10})
    assert parse_update(toxic, {"attributes": {"latency": 5}}) == (1.0, {"latency": 5, "jitter": 10})
    with pytest.raises(ApiError, match="non-negative integer, got 1.5"):
        parse_attributes("latency", {"latency": 1.5})
    with pytest.raises(ApiError, match="non-negative integer, got True"):
        parse_attributes("bandwidth", {"rate": True})


def test_slices_cover_the_chunk_in_order():
    rng = random.Random(3)
    for length, average, variation in [(480_000, 1024, 512), (24, 1, 0), (1000, 0, 0), (50, 1, 30), (1, 100, 0)]:
        cuts = slice_bounds(length, average, variation, rng)
        sizes = [b - a for a, b in zip(cuts, cuts[1:])]
        assert cuts[0] == 0 and cuts[-1] == length and all(s > 0 for s in sizes)
        assert max(sizes) <= max(average, 1) + variation
    assert len(slice_bounds(24, 1, 0, rng)) - 1 == 24  # Toxiproxy's TestSlicerToxicZeroSizeVariation
    pieces = len(slice_bounds(480_000, 1024, 512, rng)) - 1
    assert 480 / 2 <= pieces <= 480 / 2 + 480  # Toxiproxy's TestSlicerToxic


def test_no_content_has_no_body():
    encoded = encode_response(Response(204, b"ignored"), keep_alive=True)
    assert encoded.startswith(b"HTTP/1.1 204 No Content\r\n") and encoded.endswith(b"\r\n\r\n")
    assert b"Content-Length" not in encoded
    ok = encode_response(Response(200, b"{}"), keep_alive=False)
    assert b"Content-Length: 2\r\n" in ok and b"Connection: close\r\n" in ok and ok.endswith(b"{}")
