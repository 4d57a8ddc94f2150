"""Each toxic does what Toxiproxy documents, through real sockets (ported from Toxiproxy's toxics
tests: latency within jitter + 10 ms, bandwidth time within 10 %, timeout drops and closes,
reset_peer gives ECONNRESET, limit_data cuts exactly, slicer delivers intact data in many reads).
Timings are medians of several samples, so one slow scheduling on a loaded machine cannot fail them.
"""
from __future__ import annotations

import os
import socket
import statistics
import threading
import time

import pytest

MSG = b"hello world " + b"a" * 32 * 1024 + b"\n"
SAMPLES = 7


@pytest.fixture
def proxy(api, upstream):
    return api.create_proxy("test", upstream.address)


def open_pair(proxy, upstream, net) -> tuple[socket.socket, socket.socket]:
    client = net.connect(proxy.listen)
    return client, upstream.accept()


def exchange_times(net, client, server, samples: int) -> tuple[float, float, float]:
    """Medians of (client→server, server→client, round trip) for MSG on an open connection."""
    ups, downs, rounds = [], [], []
    for _ in range(samples):
        start = time.perf_counter()
        client.sendall(MSG)
        assert net.recv_exactly(server, len(MSG)) == MSG
        served = time.perf_counter()
        server.sendall(MSG)
        assert net.recv_exactly(client, len(MSG)) == MSG
        done = time.perf_counter()
        ups.append(served - start)
        downs.append(done - served)
        rounds.append(done - start)
    return statistics.median(ups), statistics.median(downs), statistics.median(rounds)


@pytest.mark.parametrize("up,down", [
    ((100, 0), None),          # TestUpstreamLatency
    (None, (100, 0)),          # TestDownstreamLatency
    ((100, 0), (100, 0)),      # TestFullstreamLatencyEven
    ((100, 20), (50, 10)),     # with jitter
    ((0, 0), (0, 0)),          # TestZeroLatency
])
def test_latency(api, proxy, upstream, net, up, down):
    """The delay a latency toxic adds is its latency within jitter + 10 ms (Toxiproxy's
    DoLatencyTest), measured as the median over the same exchange without the toxic, so the
    machine's own load is not counted as the toxic's."""
    client, server = open_pair(proxy, upstream, net)
    base_up, base_down, base_round = exchange_times(net, client, server, SAMPLES)
    # added to the live connection, as Toxiproxy's test does
    for stream, spec in (("upstream", up), ("downstream", down)):
        if spec:
            api.add_toxic("test", "latency", {"latency": spec[0], "jitter": spec[1]}, stream=stream)
    t_up, t_down, t_round = exchange_times(net, client, server, SAMPLES)
    (up_ms, up_jitter), (down_ms, down_jitter) = up or (0, 0), down or (0, 0)
    assert t_up - base_up == pytest.approx(up_ms / 1000, abs=(up_jitter + 10) / 1000)
    assert t_down - base_down == pytest.approx(down_ms / 1000, abs=(down_jitter + 10) / 1000)
    assert t_round - base_round == pytest.approx((up_ms + down_ms) / 1000, abs=(up_jitter + down_jitter + 20) / 1000)


def test_latency_never_comes_early(api, proxy, upstream, net):
    client, server = open_pair(proxy, upstream, net)
    api.add_toxic("test", "latency", {"latency": 60, "jitter": 20}, stream="upstream")
    for _ in range(SAMPLES):
        start = time.perf_counter()
        client.sendall(MSG)
        net.recv_exactly(server, len(MSG))
        assert time.perf_counter() - start >= 0.040


def test_two_latency_toxics_add_up(api, proxy, upstream, net):
    client, server = open_pair(proxy, upstream, net)
    base = exchange_times(net, client, server, 3)[0]
    api.add_toxic("test", "latency", {"latency": 100}, stream="upstream", name="latency_0")
    api.add_toxic("test", "latency", {"latency": 100}, stream="upstream", name="latency_1")
    assert exchange_times(net, client, server, 3)[0] - base == pytest.approx(0.200, abs=0.010)


def test_bandwidth(api, proxy, upstream, net):
    rate = 1000  # KB/s
    payload = b"hello world " * 40000  # 480 KB: 0.48 s at that rate
    api.add_toxic("test", "bandwidth", {"rate": rate}, stream="upstream")

    def once() -> float:
        client, server = open_pair(proxy, upstream, net)
        with client, server:
            start = time.perf_counter()
            threading.Thread(target=client.sendall, args=(payload,), daemon=True).start()
            assert net.recv_exactly(server, len(payload)) == payload
            return time.perf_counter() - start

    expected = len(payload) / (rate * 1000)
    assert net.median_time(3, once) == pytest.approx(expected, rel=0.10)


def test_timeout_zero_drops_data_and_holds_until_removed(api, proxy, upstream, net):
    client, server = open_pair(proxy, upstream, net)
    api.add_toxic("test", "timeout", {"timeout": 0}, stream="upstream")
    client.sendall(b"dropped")
    server.settimeout(0.3)
    with pytest.raises(TimeoutError):
        server.recv(100)  # neither the bytes nor a close arrive
    server.sendall(b"down")  # the other direction still flows
    assert net.recv_exactly(client, 4) == b"down"
    # removing it closes the connection both ways (TestTimeoutToxicClosesConnectionOnRemove)
    api.remove_toxic("test", "timeout_upstream")
    server.settimeout(2)
    client.settimeout(2)
    assert client.recv(1) == b""
    assert server.recv(1) == b""


def test_timeout_closes_after_its_time(api, proxy, upstream, net):
    api.add_toxic("test", "timeout", {"timeout": 200})
    start = time.perf_counter()
    client, server = open_pair(proxy, upstream, net)
    server.sendall(b"lost")
    assert client.recv(100) == b""  # the bytes were dropped, then the connection closed
    took = time.perf_counter() - start
    assert 0.200 <= took <= 0.350
    assert server.recv(1) == b""


@pytest.mark.parametrize("stream,timeout", [("upstream", 0), ("upstream", 100), ("downstream", 100)])
def test_reset_peer(api, proxy, upstream, net, stream, timeout):
    api.add_toxic("test", "reset_peer", {"timeout": timeout}, stream=stream)
    line = b"reset toxic payload\n"

    def answer() -> None:  # the upstream answers the line, as Toxiproxy's resetTCPHelper
        try:
            with upstream.accept() as conn:
                if conn.recv(len(line)):
                    conn.sendall(line)
                conn.recv(1)
        except OSError:
            pass

    def plain() -> float:
        threading.Thread(target=answer, daemon=True).start()
        start = time.perf_counter()
        with net.connect(proxy.listen) as client:
            client.sendall(line)
            assert net.recv_exactly(client, len(line)) == line
            return time.perf_counter() - start

    def once() -> float:
        threading.Thread(target=answer, daemon=True).start()
        start = time.perf_counter()
        with net.connect(proxy.listen) as client:
            client.sendall(line)
            with pytest.raises(ConnectionResetError):
                client.recv(1000)
            took = time.perf_counter() - start
            assert client.recv(1000) == b""  # after the reset, the socket is at its end
        return took

    took = net.median_time(3, once)
    # Toxiproxy's bound is timeout ± (timeout + 10 ms); what a plain exchange costs here is added
    # to the top of it, so the machine's load is not counted as the toxic's
    api.remove_toxic("test", f"reset_peer_{stream}")
    base = net.median_time(3, plain)
    assert timeout / 1000 <= took <= base + (2 * timeout + 10) / 1000


@pytest.mark.parametrize("stream", ["upstream", "downstream"])
def test_limit_data_cuts_exactly(api, proxy, upstream, net, stream):
    api.add_toxic("test", "limit_data", {"bytes": 1000}, stream=stream)
    client, server = open_pair(proxy, upstream, net)
    sender, receiver = (client, server) if stream == "upstream" else (server, client)
    payload = os.urandom(5000)
    sender.sendall(payload[:600])  # the cut falls inside the second write
    sender.sendall(payload[600:])
    assert net.recv_all(receiver) == payload[:1000]
    try:
        assert sender.recv(1) == b""  # closed both ways
    except ConnectionResetError:
        pass  # also closed: the proxy had unread bytes from this side when it closed


def test_limit_data_zero_passes_nothing(api, proxy, upstream, net):
    api.add_toxic("test", "limit_data", {"bytes": 0}, stream="upstream")
    client, server = open_pair(proxy, upstream, net)
    client.sendall(b"x" * 100)
    assert net.recv_all(server) == b""


def test_slicer_delivers_intact_data_in_many_reads(api, proxy, upstream, net):
    api.add_toxic("test", "slicer", {"average_size": 100, "size_variation": 50, "delay": 1000})
    client, server = open_pair(proxy, upstream, net)
    payload = os.urandom(20000)
    server.sendall(payload)
    received, reads = bytearray(), 0
    while len(received) < len(payload):
        chunk = client.recv(65536)
        assert chunk, "closed early"
        received += chunk
        reads += 1
    assert bytes(received) == payload
    # 20000 bytes in pieces of at most 150 bytes, 1 ms apart: well over a hundred pieces
    assert reads >= 50, f"only {reads} reads: the data was not sliced"


def test_slow_close_delays_the_close(api, proxy, upstream, net):
    api.add_toxic("test", "slow_close", {"delay": 200})
    client, server = open_pair(proxy, upstream, net)
    server.sendall(b"bye")
    start = time.perf_counter()
    server.close()
    assert net.recv_exactly(client, 3) == b"bye"
    assert time.perf_counter() - start < 0.1  # the data is not held, only the close
    assert client.recv(1) == b""
    assert 0.200 <= time.perf_counter() - start <= 0.350


def test_noop_passes_everything(api, proxy, upstream, net):
    api.add_toxic("test", "noop", stream="upstream")
    api.add_toxic("test", "noop")
    client, server = open_pair(proxy, upstream, net)
    payload = os.urandom(300_000)
    threading.Thread(target=client.sendall, args=(payload,), daemon=True).start()
    assert net.recv_exactly(server, len(payload)) == payload
    server.sendall(payload[:1000])
    assert net.recv_exactly(client, 1000) == payload[:1000]


def test_toxicity_is_drawn_per_connection_from_the_seed(api, echo, net):
    def outcomes() -> list[bool]:
        proxy = api.create_proxy("dice", echo.address)
        # active on a connection: the first answer closes it; inactive: the answer comes back
        api.add_toxic("dice", "limit_data", {"bytes": 0}, toxicity=0.5)
        seen = []
        for _ in range(16):
            with net.connect(proxy.listen) as sock:
                sock.sendall(b"x")
                try:
                    seen.append(sock.recv(1) == b"x")
                except ConnectionResetError:
                    seen.append(False)
        api.delete_proxy("dice")
        return seen

    first = outcomes()
    assert any(first) and not all(first), f"toxicity 0.5 over 16 connections hit all or none: {first}"
    # the same seed, proxy name and connection numbers draw the same
    assert outcomes() == first
