"""Fixtures for the fault proxy's tests: one real proxy server process (`python -m chaoskit.proxy`)
for the session, emptied after every test, and loopback TCP servers to proxy to."""
from __future__ import annotations

import http.client
import json
import queue
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chaoskit.proxy import ProxyServer, ToxiproxyClient

SEED = 20240


class Upstream:
    """A loopback server; the test takes each accepted socket with `accept()` and plays the server."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self._accepted: queue.Queue[socket.socket] = queue.Queue()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._open.append(conn)
            self._on_accept(conn)

    def _on_accept(self, conn: socket.socket) -> None:
        self._accepted.put(conn)

    def accept(self, timeout: float = 5.0) -> socket.socket:
        conn = self._accepted.get(timeout=timeout)
        conn.settimeout(timeout)
        return conn

    def close(self) -> None:
        self._sock.close()
        for conn in self._open:
            conn.close()

    def __enter__(self) -> Upstream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EchoServer(Upstream):
    """An upstream that sends back every byte it receives, on every connection."""

    def _on_accept(self, conn: socket.socket) -> None:
        threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        try:
            while data := conn.recv(65536):
                conn.sendall(data)
        except OSError:
            pass
        finally:
            conn.close()


class Http:
    """Raw HTTP against the API, to check status codes and bodies byte for byte."""

    def __init__(self, port: int) -> None:
        self.port = port

    def __call__(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
                 headers: dict[str, str] | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            conn.request(method, path, body=data, headers=headers or {})
            answer = conn.getresponse()
            text = answer.read()
        finally:
            conn.close()
        try:
            return answer.status, json.loads(text) if text else None
        except ValueError:
            return answer.status, text.decode()


@pytest.fixture(scope="session")
def proxy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    with ProxyServer(run_id="proxy-tests", workdir=tmp_path_factory.mktemp("proxy"), seed=SEED) as server:
        yield server


@pytest.fixture
def api(proxy_server: ProxyServer) -> Iterator[ToxiproxyClient]:
    client = proxy_server.client()
    try:
        yield client
    finally:
        client.delete_all()


@pytest.fixture
def raw_http(proxy_server: ProxyServer, api: ToxiproxyClient) -> Http:
    return Http(proxy_server.ready_info["port"])


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    with EchoServer() as server:
        yield server


class Net:
    """Socket and timing helpers, handed to tests as the `net` fixture."""

    @staticmethod
    def connect(listen: str, timeout: float = 5.0) -> socket.socket:
        host, _, port = listen.rpartition(":")
        sock = socket.create_connection((host, int(port)), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    @staticmethod
    def recv_exactly(sock: socket.socket, size: int) -> bytes:
        buf = bytearray()
        while len(buf) < size:
            chunk = sock.recv(min(65536, size - len(buf)))
            if not chunk:
                raise AssertionError(f"connection closed after {len(buf)} of {size} bytes")
            buf += chunk
        return bytes(buf)

    @staticmethod
    def recv_all(sock: socket.socket) -> bytes:
        """Everything until the peer closes."""
        buf = bytearray()
        while chunk := sock.recv(65536):
            buf += chunk
        return bytes(buf)

    @staticmethod
    def median_time(samples: int, once: Callable[[], float]) -> float:
        """The median of `samples` measurements: one slow scheduling on a loaded machine cannot fail it."""
        return statistics.median(once() for _ in range(samples))

    @staticmethod
    def elapsed(action: Callable[[], object]) -> float:
        start = time.perf_counter()
        action()
        return time.perf_counter() - start


@pytest.fixture
def net() -> Net:
    return Net()
