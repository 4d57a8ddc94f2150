"""Link names and the ProxiedRouter against our real proxy server: one proxy per path, re-pointed
when a target's address changes."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from chaoskit.cluster.proxy_node import ProxyServer
from chaoskit.cluster.topology import Link, ProxiedRouter, link_name, node_name, short_name


@pytest.mark.parametrize("node,short", [("broker-1", "b1"), ("controller-12", "ctl12"), ("zookeeper-3", "zk3"),
                                        ("client", "c")])
def test_short_names_round_trip(node, short):
    assert short_name(node) == short and node_name(short) == node


def test_link_names_say_who_dials_whom_and_bad_ones_are_refused():
    assert link_name("controller-1", "broker-2") == "ctl1-b2"
    link = Link.parse("b1-zk1")
    assert (link.source, link.target) == ("broker-1", "zookeeper-1") and link.touches("zookeeper-1")
    for bad in ("b1", "zk1-b1", "x1-b2", "b1-c"):  # ZooKeeper and clients never dial; clients are never dialled
        with pytest.raises(ValueError, match="link name"):
            Link.parse(bad)
    with pytest.raises(ValueError, match="node name"):
        short_name("kafka-1")


def echo_server() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    return srv, srv.getsockname()[1]


def roundtrip(address: tuple[str, int]) -> bytes:
    with socket.create_connection(address, timeout=5) as s:
        s.sendall(b"ping")
        return s.recv(4)


def test_router_makes_one_proxy_per_path_and_repoints_a_moved_target(tmp_path: Path):
    first, port1 = echo_server()
    moved, port2 = echo_server()
    with ProxyServer("topology", tmp_path) as server:
        router = ProxiedRouter(server.client())
        a = router.address("client", "broker-1", ("127.0.0.1", port1))
        b = router.address("broker-2", "broker-1", ("127.0.0.1", port1))
        assert a != b and router.address("client", "broker-1", ("127.0.0.1", port1)) == a  # cached
        assert sorted(server.client().proxies()) == ["b2-b1", "c-b1"]
        for address in (a, b):
            with socket.create_connection(address, timeout=5):
                conn, _ = first.accept()
                conn.close()
        # broker-1 had to take another port: every proxy to it now forwards there
        router.address("controller-1", "broker-1", ("127.0.0.1", port2))
        assert {p.upstream for p in server.client().proxies().values()} == {f"127.0.0.1:{port2}"}
        with socket.create_connection(a, timeout=5):
            conn, _ = moved.accept()
            conn.close()
        assert router.describe()["c-b1"]["upstream"] == f"127.0.0.1:{port2}"
        assert [l.name for l in router.links_of("controller-1")] == ["ctl1-b1"]
    first.close()
    moved.close()
