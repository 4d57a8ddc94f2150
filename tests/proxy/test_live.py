"""Live connections: toxics added, changed and removed on an open link take effect at once and
lose no byte; disabling drops every connection and enabling serves the same address again."""
from __future__ import annotations

import random
import socket
import threading
import time

import pytest

from chaoskit.proxy import ProxyNotFound


def round_trip(net, sock, payload: bytes = b"ping") -> float:
    start = time.perf_counter()
    sock.sendall(payload)
    assert net.recv_exactly(sock, len(payload)) == payload
    return time.perf_counter() - start


# (name, type, stream, attributes): toggled on and off while bytes stream through
CHURN = [
    ("noop_up", "noop", "upstream", {}),
    ("noop_down", "noop", "downstream", {}),
    ("lat_up", "latency", "upstream", {"latency": 3, "jitter": 2}),
    ("lat_down", "latency", "downstream", {"latency": 2}),
    ("slice_down", "slicer", "downstream", {"average_size": 700, "size_variation": 300, "delay": 20}),
    ("slice_up", "slicer", "upstream", {"average_size": 4000, "size_variation": 1000}),
    ("bw_up", "bandwidth", "upstream", {"rate": 20000}),
    ("bw_down", "bandwidth", "downstream", {"rate": 30000}),
    ("slow_close", "slow_close", "downstream", {"delay": 10}),
]


def test_no_data_lost_while_toxics_change(api, echo, net):
    """Toxiproxy's TestToxicAddRemove, with every data-keeping toxic, both streams, updates and
    resets: bytes stream through an echo server until 150 changes were made, then the client half
    closes, and everything it sent must have come back, in order."""
    proxy = api.create_proxy("churn", echo.address)
    sock = net.connect(proxy.listen, timeout=30)
    sent, received = bytearray(), bytearray()
    stop = threading.Event()

    def send() -> None:
        rng = random.Random(1)
        while not stop.is_set() and len(sent) < 50_000_000:
            piece = rng.randbytes(rng.randrange(1, 40_000))
            sock.sendall(piece)
            sent.extend(piece)
        sock.shutdown(socket.SHUT_WR)  # the end of the stream travels the chain too

    def receive() -> None:
        while chunk := sock.recv(65536):
            received.extend(chunk)

    threads = [threading.Thread(target=send, daemon=True), threading.Thread(target=receive, daemon=True)]
    for t in threads:
        t.start()
    rng, present = random.Random(2), set()
    for change in range(1, 151):
        name, kind, stream, attrs = rng.choice(CHURN)
        if name in present:
            if rng.random() < 0.3:
                api.update_toxic("churn", name, attrs)
            else:
                api.remove_toxic("churn", name)
                present.discard(name)
        else:
            api.add_toxic("churn", kind, attrs, stream=stream, name=name)
            present.add(name)
        if change % 25 == 0:
            api.reset()
            present.clear()
    stop.set()
    for t in threads:
        t.join(20)
    sock.close()
    assert not any(t.is_alive() for t in threads), "the stream did not finish"
    assert len(sent) > 1_000_000, f"only {len(sent)} bytes flowed while the toxics changed"
    assert len(received) == len(sent), f"{len(received)} of {len(sent)} bytes came back"
    assert received == sent


@pytest.mark.parametrize("how", ["remove", "toxicity 0", "latency 0"])
def test_lifting_a_toxic_releases_the_bytes_it_holds(api, upstream, net, how):
    proxy = api.create_proxy("hold", upstream.address)
    api.add_toxic("hold", "latency", {"latency": 5000})
    client, server = net.connect(proxy.listen), upstream.accept()
    server.sendall(b"held")
    client.settimeout(0.3)
    with pytest.raises(TimeoutError):
        client.recv(4)  # held by the latency toxic
    start = time.perf_counter()
    if how == "remove":
        api.remove_toxic("hold", "latency_downstream")
    elif how == "toxicity 0":
        api.update_toxic("hold", "latency_downstream", toxicity=0.0)
    else:
        api.update_toxic("hold", "latency_downstream", {"latency": 0})
    client.settimeout(5)
    assert net.recv_exactly(client, 4) == b"held"
    assert time.perf_counter() - start < 0.5  # at once, not after the 5 s


def test_toxics_added_and_changed_on_a_live_connection_take_effect(api, echo, net):
    proxy = api.create_proxy("live", echo.address)
    sock = net.connect(proxy.listen)
    assert round_trip(net, sock) < 0.1
    api.add_toxic("live", "latency", {"latency": 200})
    assert round_trip(net, sock) >= 0.2
    api.update_toxic("live", "latency_downstream", {"latency": 0})
    assert round_trip(net, sock) < 0.1
    api.update_toxic("live", "latency_downstream", {"latency": 150})
    assert round_trip(net, sock) >= 0.15
    sock.close()


def test_removing_a_toxic_behind_a_timeout_does_not_hang(api, upstream, net):
    """Toxiproxy's TestTimeoutToxicDoesNotCauseHang."""
    proxy = api.create_proxy("hang", upstream.address)
    client, _server = net.connect(proxy.listen), upstream.accept()
    api.add_toxic("hang", "latency", {"latency": 10}, stream="upstream", name="might_block")
    api.add_toxic("hang", "timeout", {"timeout": 0}, stream="upstream", name="timeout")
    for _ in range(5):
        client.sendall(b"hello")
    start = time.perf_counter()
    api.remove_toxic("hang", "might_block")
    assert time.perf_counter() - start < 1.0
    client.close()


def test_reset_keeps_connections(api, echo, net):
    """Toxiproxy's TestPersistentConnections."""
    proxy = api.create_proxy("keep", echo.address)
    sock = net.connect(proxy.listen)
    api.add_toxic("keep", "noop", stream="upstream", name="noop_up")
    api.add_toxic("keep", "noop", name="noop_down")
    round_trip(net, sock)
    api.reset()
    round_trip(net, sock)
    api.reset()
    round_trip(net, sock)
    sock.close()


def test_disable_drops_every_connection_and_enable_rebinds(api, echo, net):
    proxy = api.create_proxy("gate", echo.address)
    socks = [net.connect(proxy.listen) for _ in range(3)]
    for sock in socks:
        round_trip(net, sock)
    assert api.disable("gate").enabled is False
    for sock in socks:
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
        sock.close()
    with pytest.raises(ConnectionRefusedError):
        net.connect(proxy.listen)
    assert api.enable("gate").listen == proxy.listen
    with net.connect(proxy.listen) as sock:
        round_trip(net, sock)
    api.delete_proxy("gate")
    with pytest.raises(ConnectionRefusedError):
        net.connect(proxy.listen)
    with pytest.raises(ProxyNotFound):
        api.get_proxy("gate")


def test_an_unreachable_upstream_closes_the_client(api, net):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = s.getsockname()[1]
    proxy = api.create_proxy("nowhere", f"127.0.0.1:{nobody}")
    with net.connect(proxy.listen) as sock:
        sock.sendall(b"hello?")
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
    assert api.get_proxy("nowhere").enabled  # the proxy itself goes on serving
