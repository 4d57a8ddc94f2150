"""A small blocking client for one broker connection: send a request at a version, get its response.

The controller uses it for LeaderAndIsr/UpdateMetadata/StopReplica, tests use it to speak to a
broker directly (including raw, deliberately broken frames). One request at a time; any timeout
or protocol surprise closes the socket, since its stream position is then unknown.
"""
from __future__ import annotations

import itertools
import socket
import struct
import time
from types import TracebackType

from kafka.protocol.api_message import ApiMessage

from chaoskit.protocol.framing import FrameError, frame, frame_size
from chaoskit.protocol.registry import response_class

_CORRELATION = struct.Struct(">i")


class WireError(Exception):
    """The exchange with the broker failed; the message says which broker and what happened."""


class WireTimeout(WireError):
    """No (complete) answer within the timeout."""


class WireClosed(WireError):
    """The broker closed the connection, e.g. after a malformed request."""


class WireClient:
    def __init__(self, host: str, port: int, timeout: float = 5.0, client_id: str = "chaoskit",
                 max_frame_bytes: int = 100 * 1024 * 1024) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.client_id, self.max_frame_bytes = client_id, max_frame_bytes
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self) -> WireClient:
        if self._sock is None:
            try:
                self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except socket.timeout as e:
                raise WireTimeout(f"connecting to {self.address} timed out after {self.timeout}s") from e
            except OSError as e:
                raise WireError(f"cannot connect to {self.address}: {e}") from e
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> WireClient:
        return self.connect()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def request(self, request: ApiMessage, version: int, timeout: float | None = None) -> ApiMessage | None:
        """The decoded response (None for a request that expects none, such as Produce with acks=0)."""
        correlation_id = next(self._ids) & 0x7FFFFFFF
        request.API_VERSION = version
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        data = bytes(request.encode(header=True, framed=True))
        if not request.expect_response():
            self._exchange(data, timeout, expect_reply=False)
            return None
        payload = self._exchange(data, timeout)
        assert payload is not None
        (got,) = _CORRELATION.unpack_from(payload) if len(payload) >= 4 else (None,)
        if got != correlation_id:
            self.close()
            raise WireError(f"{self.address} answered correlation id {got} to request {correlation_id}")
        cls = response_class(request.API_KEY, version)
        try:
            return cls.decode(payload, version=version, header=True)
        except Exception as e:  # kafka-python raises struct.error, ValueError...
            self.close()
            raise WireError(f"{self.address}: {cls.__name__} v{version} does not decode: {e!r}") from e

    def roundtrip_raw(self, payload: bytes, timeout: float | None = None) -> bytes | None:
        """Send one frame's payload as is; the reply's payload, or None if the broker closed the connection."""
        try:
            return self._exchange(frame(payload), timeout)
        except WireClosed:
            return None

    def _exchange(self, data: bytes, timeout: float | None, expect_reply: bool = True) -> bytes | None:
        sock = self.connect()._sock
        assert sock is not None
        budget = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(data)
            if not expect_reply:
                return None
            size = frame_size(self._recv(sock, 4, deadline), self.max_frame_bytes)
            return self._recv(sock, size, deadline)
        except socket.timeout as e:
            self.close()
            raise WireTimeout(f"no answer from {self.address} within {budget}s") from e
        except FrameError as e:
            self.close()
            raise WireError(f"{self.address}: {e}") from e
        except (ConnectionResetError, BrokenPipeError) as e:
            self.close()
            raise WireClosed(f"{self.address} closed the connection: {e}") from e
        except OSError as e:
            self.close()
            raise WireError(f"{self.address}: {e}") from e

    def _recv(self, sock: socket.socket, n: int, deadline: float) -> bytes:
        chunks, got = [], 0
        while got < n:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = sock.recv(min(n - got, 1 << 20))
            if not chunk:
                self.close()
                raise WireClosed(f"{self.address} closed the connection after {got} of {n} bytes")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
