"""Which links a network fault cuts, and cutting them so overlapping faults heal correctly.

The pure part: given the cluster's links (chaoskit.cluster.topology.Link) and a grouping of nodes,
the links to cut. A cut separates groups: a link is cut when its two ends fall in groups that
must not talk. The shapes are Jepsen's: isolate one node, two halves, a bridge (two halves that
share one node), a ring (each node talks only to its neighbours), and one direction only.

`LinkCutter` applies cuts through the Toxiproxy API with a count per link, so two overlapping
windows that both cut `b1-b2` leave it cut until both have healed.
"""
from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from chaoskit.cluster.topology import Link
from chaoskit.proxy.client import ProxyNotFound, ToxiproxyClient

HOW = ("refuse", "drop")  # refuse: the proxy is disabled; drop: a black hole (timeout toxics, no data)
DIRECTIONS = ("both", "outbound", "inbound")


def isolate(links: Iterable[Link], node: str, direction: str = "both") -> list[Link]:
    """The links that cut `node` off. `outbound`: it cannot dial anyone (others still reach it);
    `inbound`: nobody can dial it (it still reaches others)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
    wanted = {"both": lambda l: l.touches(node), "outbound": lambda l: l.source == node,
              "inbound": lambda l: l.target == node}[direction]
    return sorted((l for l in links if wanted(l)), key=lambda l: l.name)


def _shuffled(nodes: Sequence[str], pick: int) -> list[str]:
    order = sorted(nodes)
    random.Random(pick).shuffle(order)
    return order


def halves(nodes: Sequence[str], pick: int) -> tuple[set[str], set[str]]:
    """Two halves of `nodes` (the first the smaller one when odd), chosen by `pick`."""
    order = _shuffled(nodes, pick)
    cut = len(order) // 2
    return set(order[:cut]), set(order[cut:])


def split(links: Iterable[Link], groups: Sequence[set[str]]) -> list[Link]:
    """The links whose ends are in different groups (ends in no group are left alone)."""
    home = {n: i for i, group in enumerate(groups) for n in group}
    return sorted((l for l in links if l.source in home and l.target in home and home[l.source] != home[l.target]),
                  key=lambda l: l.name)


def bridge(links: Iterable[Link], nodes: Sequence[str], pick: int) -> tuple[list[Link], str]:
    """Two halves joined by one node that talks to both; the links cut and the bridge node."""
    order = _shuffled(nodes, pick)
    middle = order[len(order) // 2]
    left = set(order[:len(order) // 2])
    right = set(order[len(order) // 2 + 1:])
    return split(links, [left, right]), middle


def ring(links: Iterable[Link], nodes: Sequence[str], pick: int) -> list[Link]:
    """Each node keeps only its two neighbours in a ring ordered by `pick`: every other link between
    two of `nodes` is cut (Jepsen's majorities ring, for five nodes)."""
    order = _shuffled(nodes, pick)
    n = len(order)
    near = {frozenset((order[i], order[(i + 1) % n])) for i in range(n)} if n > 1 else set()
    members = set(order)
    return sorted((l for l in links if l.source in members and l.target in members
                   and frozenset((l.source, l.target)) not in near), key=lambda l: l.name)


class LinkCutter:
    """Cuts and heals links by name, counting overlapping cuts."""

    def __init__(self, proxies: ToxiproxyClient) -> None:
        self.proxies = proxies
        self._counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def cut(self, names: Iterable[str], how: str = "refuse") -> None:
        if how not in HOW:
            raise ValueError(f"how {how!r} is not one of {', '.join(HOW)}")
        with self._lock:
            for name in names:
                key = (name, how)
                self._counts[key] = self._counts.get(key, 0) + 1
                if self._counts[key] == 1:
                    self._apply(name, how, cut=True)

    def heal(self, names: Iterable[str], how: str = "refuse") -> None:
        with self._lock:
            for name in names:
                key = (name, how)
                left = self._counts.get(key, 0) - 1
                if left > 0:
                    self._counts[key] = left
                    continue
                self._counts.pop(key, None)
                self._apply(name, how, cut=False)

    def heal_all(self) -> None:
        with self._lock:
            keys, self._counts = list(self._counts), {}
        for name, how in keys:
            self._apply(name, how, cut=False)

    def _apply(self, name: str, how: str, cut: bool) -> None:
        if how == "refuse":
            self.proxies.update_proxy(name, enabled=not cut)
            return
        for stream in ("upstream", "downstream"):
            toxic = f"chaoskit-drop-{stream}"
            if cut:
                self.proxies.add_toxic(name, "timeout", {"timeout": 0}, stream=stream, name=toxic)
            else:
                try:
                    self.proxies.remove_toxic(name, toxic)
                except ProxyNotFound:
                    pass  # a reset took it already

    @property
    def cut_links(self) -> dict[str, Any]:
        with self._lock:
            return {f"{name}:{how}": n for (name, how), n in self._counts.items()}
