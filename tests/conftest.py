"""Fixtures shared by the end-to-end tests of every package: real clusters (ZooKeeper, controllers,
brokers as processes, or as containers with backend="docker"; optionally behind fault proxies) with
short timeouts so failures are detected in seconds, stopped at the end of the module even when a
test fails. `backend` parameterizes a module's cluster over both backends. For the fault proxy's
tests and ProxyServer's: one real proxy server process (`python -m chaoskit.proxy`) for the session,
and loopback TCP servers to proxy to."""
from __future__ import annotations

import queue
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chaoskit.cluster.backends import new_cluster
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.proxy_node import ProxyServer
from chaoskit.cluster.spec import ClusterSpec

# quick failure detection for tests: ZooKeeper sessions of 4 s, ISR shrink after 3 s
FAST_BROKER = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000,
               "replica.fetch.wait.max.ms": 200, "log.retention.check.interval.ms": 500}
FAST_CONTROLLER = {"zookeeper.session.timeout.ms": 4000, "controller.request.timeout.ms": 2000}
PROXY_SEED = 20240


@pytest.fixture(scope="module", params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend in turn for a module that asks for it (docker tests carry the docker mark)."""
    return str(request.param)


@pytest.fixture(scope="module")
def make_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., LocalCluster]]:
    """make_cluster(brokers=3, controllers=2, broker_config=None, controller_config=None, backend="local", **spec)
    -> a started cluster (LocalCluster, or DockerCluster for backend="docker"), stopped at module end."""
    started: list[LocalCluster] = []

    def make(brokers: int = 3, controllers: int = 2, broker_config: dict[str, Any] | None = None,
             controller_config: dict[str, Any] | None = None, backend: str = "local", **spec: Any) -> LocalCluster:
        cluster = new_cluster(backend, ClusterSpec(
            brokers=brokers, controllers=controllers, run_dir=tmp_path_factory.mktemp("run"),
            broker_config={**FAST_BROKER, **(broker_config or {})}, controller_config={**FAST_CONTROLLER, **(controller_config or {})},
            **spec))
        started.append(cluster)
        cluster.start()
        return cluster

    try:
        yield make
    finally:
        for cluster in reversed(started):
            cluster.stop()


@pytest.fixture
def restore(request: pytest.FixtureRequest) -> Iterator[Callable[[LocalCluster], None]]:
    """restore(cluster): after the test, heal every proxied link, start every stopped node again (keeping its data) and wait
    until every broker sees every other, so the next test of the module gets a whole cluster."""
    clusters: list[LocalCluster] = []
    yield clusters.append
    for cluster in clusters:
        if cluster.proxy_url is not None:
            cluster.proxies.reset()  # every link enabled, every toxic gone
        for node in [*cluster.controllers.values(), *cluster.brokers.values()]:
            if node.paused:
                node.resume()
            if not node.running:
                node.start(clean=False)
        for broker in cluster.brokers.values():
            cluster.wait_for_metadata(broker, 30)


@pytest.fixture(scope="session")
def proxy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    with ProxyServer(run_id="proxy-tests", workdir=tmp_path_factory.mktemp("proxy"), seed=PROXY_SEED) as server:
        yield server


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


@pytest.fixture
def render() -> Callable[[Any], str]:
    """A page's DOM after load, as headless Chromium (Debian's) builds it: scripts run, images decoded."""
    import shutil
    import subprocess

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed: run `make setup` (it installs Debian's chromium)")

    def dom(page: Any) -> str:
        out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                              "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout
    return dom
