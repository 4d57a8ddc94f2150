"""The proxied topology: every path between nodes through a named proxy of its own.

A path is named by who dials whom, shortest names first: `c-b1` (the clients to broker 1),
`b1-b2` (broker 1 dialling broker 2: it fetches from broker 2), `b1-zk1`, `ctl1-zk1`,
`ctl1-b2`, and `b1-st1` (broker 1 to its storage, for a broker that keeps its data in a database
of its own, such as tansu over PostgreSQL). A link carries both directions of the TCP connections its source opens, so cutting
`b1-b2` stops broker 1's fetches from broker 2 and leaves broker 2's fetches from broker 1 alone
(those go through `b2-b1`).

`ProxiedRouter` is the cluster's Router: asked where `source` reaches `target`, it makes (through
the Toxiproxy API, ours or a real one) the proxy for that link, upstream the target's real address,
and answers the proxy's listen address. When a target's real address changes (a broker that had to
pick another port), every proxy to it is re-pointed, so configs written earlier stay right.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from chaoskit.cluster.spec import Address, host_port
from chaoskit.proxy.client import ToxiproxyClient

CLIENT = "client"
_SHORT = {"broker": "b", "controller": "ctl", "zookeeper": "zk", "storage": "st"}
_NODE = re.compile(r"(broker|controller|zookeeper|storage)-(\d+)")
_LINK = re.compile(r"(c|b\d+|ctl\d+)-(b\d+|zk\d+|st\d+)")


def short_name(node: str) -> str:
    """"broker-1" -> "b1", "controller-2" -> "ctl2", "zookeeper-1" -> "zk1", "client" -> "c"."""
    if node == CLIENT:
        return "c"
    match = _NODE.fullmatch(node)
    if not match:
        raise ValueError(f"{node!r} is not a node name (broker-N, controller-N, zookeeper-N, storage-N or client)")
    return _SHORT[match[1]] + match[2]


def node_name(short: str) -> str:
    """The inverse of short_name."""
    if short == "c":
        return CLIENT
    for role, prefix in sorted(_SHORT.items(), key=lambda kv: -len(kv[1])):  # "ctl" before "c"
        if short.startswith(prefix) and short[len(prefix):].isdigit():
            return f"{role}-{short[len(prefix):]}"
    raise ValueError(f"{short!r} is not a short node name (c, bN, ctlN, zkN, stN)")


def link_name(source: str, target: str) -> str:
    return f"{short_name(source)}-{short_name(target)}"


@dataclass(frozen=True)
class Link:
    """One proxied path: `source` dials `target` at `listen`, which forwards to `upstream`."""

    name: str
    source: str
    target: str
    listen: str
    upstream: str

    @classmethod
    def parse(cls, name: str, listen: str = "", upstream: str = "") -> Link:
        if not _LINK.fullmatch(name):
            raise ValueError(f"{name!r} is not a link name like c-b1, b1-b2, b1-zk1, ctl1-zk1, ctl1-b2 or b1-st1")
        source, target = name.split("-")
        return cls(name, node_name(source), node_name(target), listen, upstream)

    def touches(self, node: str) -> bool:
        return node in (self.source, self.target)


class ProxiedRouter:
    """A Router that puts each (source, target) path behind its own proxy."""

    def __init__(self, proxies: ToxiproxyClient, listen_host: str = "127.0.0.1") -> None:
        self.proxies = proxies
        self.listen_host = listen_host
        self._links: dict[str, Link] = {}
        self._lock = threading.Lock()  # nodes are configured from several threads at once

    def address(self, source: str, target: str, real: Address) -> Address:
        name = link_name(source, target)
        upstream = host_port(real)
        with self._lock:
            self._repoint(target, upstream)
            link = self._links.get(name)
            if link is None:
                info = self.proxies.ensure_proxy(name, upstream, self.listen_for(source, target))
                link = Link(name, source, target, self.reach(source, target, info.listen), upstream)
                self._links[name] = link
        host, port = link.listen.rsplit(":", 1)
        return host, int(port)

    def listen_for(self, source: str, target: str) -> str:
        """The listen address to ask the proxy for (any free port on this host, here)."""
        return f"{self.listen_host}:0"

    def reach(self, source: str, target: str, listen: str) -> str:
        """The address `source` dials to use a proxy listening at `listen` (the same, on one host;
        the docker backend answers differently for containers and for the test process)."""
        return listen

    def _repoint(self, target: str, upstream: str) -> None:
        for name, link in list(self._links.items()):
            if link.target == target and link.upstream != upstream:
                self.proxies.update_proxy(name, upstream=upstream)
                self._links[name] = Link(name, link.source, target, link.listen, upstream)

    @property
    def links(self) -> dict[str, Link]:
        with self._lock:
            return dict(self._links)

    def links_of(self, node: str) -> list[Link]:
        """Every link `node` dials or is dialled on."""
        return [link for link in self.links.values() if link.touches(node)]

    def describe(self) -> dict[str, dict[str, str]]:
        return {name: {"listen": link.listen, "upstream": link.upstream}
                for name, link in sorted(self.links.items())}
