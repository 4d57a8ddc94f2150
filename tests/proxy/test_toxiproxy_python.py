"""The standard client, toxiproxy-python 0.1.1, drives our server unchanged: create, list, toxics
add and remove, disable and enable, reset and populate, with bytes really flowing."""
from __future__ import annotations

import socket
import time

import pytest
from toxiproxy import Proxy, Toxiproxy
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists


@pytest.fixture
def toxiproxy(proxy_server, api) -> Toxiproxy:
    server = Toxiproxy()
    # toxiproxy-python keeps the server's address in class attributes
    server.update_api_consumer("127.0.0.1", proxy_server.ready_info["port"])
    return server


def round_trip(net, listen: str, payload: bytes = b"ping") -> float:
    with net.connect(listen) as sock:
        start = time.perf_counter()
        sock.sendall(payload)
        assert net.recv_exactly(sock, len(payload)) == payload
        return time.perf_counter() - start


def test_create_list_and_proxy_bytes(toxiproxy, echo, net):
    assert toxiproxy.running()
    assert b'"version"' in toxiproxy.version()
    proxy = toxiproxy.create(upstream=echo.address, name="echo")
    assert proxy.enabled is True and proxy.upstream == echo.address
    assert proxy.listen.startswith("127.0.0.1:") and not proxy.listen.endswith(":0")
    listed = toxiproxy.proxies()
    assert list(listed) == ["echo"] and listed["echo"].listen == proxy.listen
    assert toxiproxy.get_proxy("echo").upstream == echo.address
    round_trip(net, proxy.listen)
    with pytest.raises(ProxyExists):
        toxiproxy.create(upstream=echo.address, name="echo")


def test_toxics_add_and_remove(toxiproxy, echo, net):
    proxy = toxiproxy.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="latency", attributes={"latency": 150})
    proxy.add_toxic(type="noop", stream="upstream", name="quiet", toxicity=0.5)
    toxics = proxy.toxics()
    assert set(toxics) == {"latency_downstream", "quiet"}
    latency = toxics["latency_downstream"]
    assert (latency.type, latency.stream, latency.toxicity, latency.attributes) == \
        ("latency", "downstream", 1.0, {"latency": 150, "jitter": 0})
    assert toxics["quiet"].stream == "upstream" and toxics["quiet"].toxicity == 0.5
    assert round_trip(net, proxy.listen) >= 0.150
    assert proxy.destroy_toxic("latency_downstream") is True
    assert proxy.get_toxic("latency_downstream") is None
    assert round_trip(net, proxy.listen) < 0.150
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="no_such_toxic")
    with pytest.raises(NotFound):
        proxy.destroy_toxic("latency_downstream")
    with pytest.raises(NotFound):
        Proxy(name="missing", upstream=echo.address, enabled=True, listen="127.0.0.1:1").destroy()


def test_disable_and_enable(toxiproxy, echo, net):
    proxy = toxiproxy.create(upstream=echo.address, name="echo")
    live = net.connect(proxy.listen)
    live.sendall(b"a")
    assert live.recv(1) == b"a"
    with proxy.down():
        assert toxiproxy.get_proxy("echo").enabled is False
        assert live.recv(1) == b""  # the open connection was dropped
        with pytest.raises(ConnectionRefusedError):
            net.connect(proxy.listen)
    assert toxiproxy.get_proxy("echo").enabled is True
    round_trip(net, proxy.listen)  # the same address serves again
    live.close()


def test_reset_enables_and_clears(toxiproxy, echo, net):
    proxy = toxiproxy.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="latency", attributes={"latency": 500})
    proxy.disable()
    assert toxiproxy.reset() is True
    again = toxiproxy.get_proxy("echo")
    assert again.enabled is True and again.toxics() == {}
    assert round_trip(net, again.listen) < 0.5


def test_populate(toxiproxy, echo, upstream, net):
    wanted = [{"name": "one", "upstream": echo.address, "listen": "127.0.0.1:0"},
              {"name": "two", "upstream": upstream.address, "listen": "127.0.0.1:0", "enabled": False}]
    created = toxiproxy.populate(wanted)
    assert [p.name for p in created] == ["one", "two"]
    proxies = toxiproxy.proxies()
    assert proxies["one"].enabled is True and proxies["two"].enabled is False
    round_trip(net, proxies["one"].listen)
    # a second populate with a fixed listen address keeps the proxy (toxiproxy-python compares listen)
    fixed = proxies["one"].listen
    proxies["one"].add_toxic(type="noop")
    assert toxiproxy.populate([{"name": "one", "upstream": echo.address, "listen": fixed}]) == []
    assert set(toxiproxy.get_proxy("one").toxics()) == {"noop_downstream"}
    toxiproxy.destroy_all()
    assert toxiproxy.proxies() == {}
    with pytest.raises(socket.error):
        net.connect(fixed, timeout=1)
