"""Which links each partition shape cuts (pure), and overlapping cuts healing in the right order
against our real proxy server."""
from __future__ import annotations

from itertools import permutations
from pathlib import Path

import pytest

from chaoskit.cluster.proxy_node import ProxyServer
from chaoskit.cluster.topology import Link, link_name
from chaoskit.nemesis import link_sets

BROKERS = [f"broker-{i}" for i in range(1, 6)]


def mesh(nodes: list[str]) -> list[Link]:
    return [Link.parse(link_name(a, b)) for a, b in permutations(nodes, 2)]


LINKS = mesh(BROKERS) + [Link.parse(link_name("client", b)) for b in BROKERS] + \
    [Link.parse(link_name(b, "zookeeper-1")) for b in BROKERS]


def reachable(cut: list[Link], a: str, b: str) -> bool:
    return link_name(a, b) not in {l.name for l in cut}


def test_isolate_cuts_every_link_of_the_node_or_one_direction():
    both = link_sets.isolate(LINKS, "broker-2")
    assert {l.name for l in both} == {l.name for l in LINKS if l.touches("broker-2")}
    out = link_sets.isolate(LINKS, "broker-2", "outbound")
    assert all(l.source == "broker-2" for l in out) and "b2-zk1" in {l.name for l in out}
    inbound = link_sets.isolate(LINKS, "broker-2", "inbound")
    assert {l.name for l in inbound} >= {"c-b2", "b1-b2"} and all(l.target == "broker-2" for l in inbound)
    with pytest.raises(ValueError, match="direction"):
        link_sets.isolate(LINKS, "broker-2", "sideways")


def test_halves_cut_exactly_the_links_across():
    small, large = link_sets.halves(BROKERS, pick=3)
    assert (len(small), len(large)) == (2, 3) and small | large == set(BROKERS)
    cut = link_sets.split(LINKS, [small, large])
    for a, b in permutations(BROKERS, 2):
        assert reachable(cut, a, b) == ((a in small) == (b in small))
    assert all("zk1" not in l.name and not l.name.startswith("c-") for l in cut)  # ends in no group: untouched
    assert link_sets.halves(BROKERS, pick=3) == (small, large)  # the pick decides, nothing else


def test_bridge_keeps_one_node_talking_to_both_halves():
    cut, middle = link_sets.bridge(LINKS, BROKERS, pick=11)
    others = [b for b in BROKERS if b != middle]
    assert all(reachable(cut, middle, o) and reachable(cut, o, middle) for o in others)
    assert sum(not reachable(cut, a, b) for a, b in permutations(others, 2)) == 8  # 2x2 pairs, both ways


def test_ring_leaves_each_node_its_two_neighbours():
    cut = link_sets.ring(LINKS, BROKERS, pick=5)
    for node in BROKERS:
        talks = [o for o in BROKERS if o != node and reachable(cut, node, o)]
        assert len(talks) == 2 and all(reachable(cut, o, node) for o in talks)


def test_overlapping_cuts_heal_only_when_the_last_one_heals(tmp_path: Path):
    with ProxyServer("cutter", tmp_path) as server:
        proxies = server.client()
        for name in ("b1-b2", "b2-b1"):
            proxies.create_proxy(name, upstream="127.0.0.1:9")
        cutter = link_sets.LinkCutter(proxies)
        cutter.cut(["b1-b2", "b2-b1"])
        cutter.cut(["b1-b2"])
        cutter.cut(["b2-b1"], how="drop")
        state = proxies.proxies()
        assert not state["b1-b2"].enabled and not state["b2-b1"].enabled
        assert {t.name for t in proxies.toxics("b2-b1")} == {"chaoskit-drop-upstream", "chaoskit-drop-downstream"}
        cutter.heal(["b1-b2", "b2-b1"])
        assert not proxies.get_proxy("b1-b2").enabled and proxies.get_proxy("b2-b1").enabled
        cutter.heal_all()
        assert proxies.get_proxy("b1-b2").enabled and proxies.toxics("b2-b1") == []
        with pytest.raises(ValueError, match="how"):
            cutter.cut(["b1-b2"], how="unplug")
