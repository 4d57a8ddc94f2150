"""The blocking wire client against a real TCP server on loopback."""
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from chaoskit.protocol.internal import UpdateMetadataRequest, UpdateMetadataResponse
from chaoskit.protocol.registry import decode_request, encode_response
from chaoskit.protocol.wire_client import WireClient, WireClosed, WireError, WireTimeout


def _recv_frame(conn: socket.socket) -> bytes | None:
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf
    size = exactly(4)
    return None if size is None else exactly(struct.unpack(">i", size)[0])


@contextmanager
def server(behaviour: str) -> Iterator[int]:
    """A one-connection server: 'answer' UpdateMetadata, 'hang', 'close', or answer a 'wrong-id'."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve():
        conn, _ = listener.accept()
        with conn:
            while (payload := _recv_frame(conn)) is not None:
                if behaviour == "close":
                    return
                if behaviour == "hang":
                    done.wait(10)
                    return
                header, req = decode_request(payload)
                if behaviour == "wrong-id":
                    header.correlation_id += 1
                conn.sendall(encode_response(header, UpdateMetadataResponse(error_code=req.controller_epoch)))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        listener.close()
        thread.join(5)


def update_metadata(epoch: int) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=1, controller_epoch=epoch, topics=[], live_brokers=[], deleted_topics=[])


def test_requests_get_their_responses():
    with server("answer") as port, WireClient("127.0.0.1", port, timeout=5) as client:
        assert client.request(update_metadata(3), version=0).error_code == 3
        assert client.request(update_metadata(4), version=0).error_code == 4


def test_timeout_is_reported_and_closes():
    with server("hang") as port, WireClient("127.0.0.1", port, timeout=5) as client:
        with pytest.raises(WireTimeout, match=f"no answer from 127.0.0.1:{port} within 0.3s"):
            client.request(update_metadata(1), version=0, timeout=0.3)


def test_closed_connection():
    with server("close") as port, WireClient("127.0.0.1", port) as client:
        with pytest.raises(WireClosed, match="closed the connection"):
            client.request(update_metadata(1), version=0)
    with server("close") as port, WireClient("127.0.0.1", port) as client:
        assert client.roundtrip_raw(b"garbage!") is None


def test_mismatched_correlation_id():
    with server("wrong-id") as port, WireClient("127.0.0.1", port) as client:
        with pytest.raises(WireError, match="answered correlation id 2 to request 1"):
            client.request(update_metadata(1), version=0)


def test_connection_refused_names_the_address():
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    with pytest.raises(WireError, match=f"cannot connect to 127.0.0.1:{port}"):
        WireClient("127.0.0.1", port, timeout=1).connect()
