"""DockerCluster: the nodes of one ClusterSpec as containers, through the docker SDK.

    with DockerCluster(ClusterSpec(brokers=3, controllers=2)) as cluster:
        cluster.bootstrap_servers   # "127.0.0.1:p1,..." (published ports, or the client proxies')
        cluster.broker(2).kill(); cluster.broker(2).start(clean=False)   # docker kill / docker start
        cluster.broker(1).pause()                                         # docker pause

The same attributes and queries as LocalCluster (it reuses them: nodes, broker(), controller(),
leader_of(), partition_state(), wait_until_replicated(), proxies, router, describe()), so tests and
fault packs run on either backend unchanged. Every run gets a private bridge network
`chaoskit-<run id>`; containers reach each other by node name there, and the test process reaches
brokers, ZooKeeper and the proxy through ports published on 127.0.0.1. With `proxied`, the fault
proxy runs in its own container and every path goes through one of its proxies, as locally.
A reaper process (chaoskit.cluster.docker_reaper) removes the run's containers and network if the
runner dies without stopping them. Images come from chaoskit.cluster.images (built when missing).
"""
from __future__ import annotations

import logging
import subprocess
import threading
from typing import Any

from chaoskit.cluster import reaper
from chaoskit.cluster.docker_engine import engine
from chaoskit.cluster.docker_nodes import (LOOPBACK, RUN_LABEL, DockerBroker, DockerController, DockerProxy,
                                           DockerPythonNode, DockerZooKeeper)
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import Address, ClusterSpec, DirectRouter, host_port
from chaoskit.cluster.topology import CLIENT, ProxiedRouter
from chaoskit.cluster.waiting import free_port
from chaoskit.cluster.zk_view import ZkView
from chaoskit.cluster.zookeeper import zoo_cfg
from chaoskit.proxy.client import ToxiproxyClient

log = logging.getLogger("chaoskit.cluster.docker")

CLIENT_PROXY_BASE = 19000  # c-bN listens on 19000+N in the proxy container, published for the test process
LINK_PORT_BASE = 20000     # every other link gets the next port from here


class DockerRouter:
    """No proxies: the test process uses a node's published port, containers its name on the network."""

    def __init__(self, cluster: DockerCluster) -> None:
        self.cluster = cluster

    def address(self, source: str, target: str, real: Address) -> Address:
        if source != CLIENT:
            return real
        return self.cluster.broker_by_name(target).address


class DockerProxiedRouter(ProxiedRouter):
    """Every path through a proxy in the proxy container: containers dial `toxiproxy:<port>`,
    the test process dials the client proxies at their published ports."""

    def __init__(self, proxies: ToxiproxyClient, proxy: DockerProxy) -> None:
        super().__init__(proxies, "0.0.0.0")
        self.proxy = proxy
        self._next_port = LINK_PORT_BASE

    def listen_for(self, source: str, target: str) -> str:
        if source == CLIENT:
            return f"0.0.0.0:{CLIENT_PROXY_BASE + int(target.rsplit('-', 1)[1])}"
        self._next_port += 1  # called under the router's lock
        return f"0.0.0.0:{self._next_port}"

    def reach(self, source: str, target: str, listen: str) -> str:
        port = int(listen.rsplit(":", 1)[1])
        if source == CLIENT:
            return f"{LOOPBACK}:{self.proxy.published[port]}"
        return f"{self.proxy.name}:{port}"


class DockerCluster(LocalCluster):
    backend = "docker"
    reaper_module = "chaoskit.cluster.docker_reaper"

    def __init__(self, spec: ClusterSpec, images: dict[str, str] | None = None, client: Any = None) -> None:
        if spec.proxy_url is not None:
            raise ValueError("the docker backend runs its own fault proxy in a container; proxy_url is "
                             "for the local backend (leave it out, keep proxied=True)")
        if not isinstance(spec.router, DirectRouter):
            raise ValueError("the docker backend routes by itself (container names inside the run network, "
                             "published ports for the test process); give proxied=True instead of a router")
        self.client = client or engine()  # first: no engine, nothing made
        self.spec = spec
        self.run_id = spec.run_id
        self.run_dir = spec.directory
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.images = images
        self.network_name = f"chaoskit-{self.run_id}"
        self.network: Any = None
        self._ports_lock = threading.Lock()
        self._ports_given: set[int] = set()
        self.view: ZkView | None = None
        self.router: Any = DockerRouter(self)
        self.proxy: DockerProxy | None = None
        self.proxy_url: str | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None
        self.zookeepers: list[DockerZooKeeper] = []
        self.controllers: dict[int, DockerController] = {}  # type: ignore[assignment]
        self.brokers: dict[int, DockerBroker] = {}  # type: ignore[assignment]

    def free_port(self) -> int:
        """A host port for publishing, never the same twice in this run."""
        with self._ports_lock:
            while (port := free_port(LOOPBACK)) in self._ports_given:
                pass
            self._ports_given.add(port)
            return port

    def broker_by_name(self, name: str) -> DockerBroker:
        return self.brokers[int(name.rsplit("-", 1)[1])]

    # --- configs -----------------------------------------------------------------------------
    def _zk_connect_for(self, name: str) -> str:
        return ",".join(host_port(self.router.address(name, z.name, (z.name, 2181))) for z in self.zookeepers)

    def _every(self, source: str, targets: dict[int, DockerBroker]) -> dict[str, str]:
        """Every broker's address as `source` reaches it (all listed: a broker registers the
        address clients use, which containers cannot dial)."""
        return {str(i): host_port(self.router.address(source, b.name, b.internal_address)) for i, b in targets.items()}

    def _broker_config(self, node: DockerPythonNode) -> dict[str, Any]:  # type: ignore[override]
        assert isinstance(node, DockerBroker)
        generated = {
            "broker.id": node.broker_id,
            "listeners": f"0.0.0.0:{node.PORT}",
            "advertised.listeners": host_port(self.router.address(CLIENT, node.name, node.internal_address)),
            "log.dirs": "/data/log",
            "zookeeper.connect": self._zk_connect_for(node.name),
            "peer.addresses": self._every(node.name, {i: b for i, b in self.brokers.items() if b is not node}),
        }
        return self.spec.config_for("broker", node.name, generated)

    def _controller_config(self, node: DockerPythonNode) -> dict[str, Any]:  # type: ignore[override]
        assert isinstance(node, DockerController)
        generated = {
            "controller.id": node.controller_id,
            "zookeeper.connect": self._zk_connect_for(node.name),
            "broker.addresses": self._every(node.name, self.brokers),
        }
        return self.spec.config_for("controller", node.name, generated)

    def _zoo_cfg(self) -> str:
        n = self.spec.zookeepers
        servers = {i: f"zookeeper-{i}:2888:3888" for i in range(1, n + 1)} if n > 1 else {}
        # a quorum member must listen on its container's address, not the one its name resolves to
        settings = {"quorumListenOnAllIPs": "true"} if n > 1 else {}
        return zoo_cfg("/data/zk", 2181, "0.0.0.0", servers, settings)

    # --- life cycle --------------------------------------------------------------------------
    def _make_nodes(self) -> None:
        if self.images is None:
            from chaoskit.cluster.images import build_images
            self.images = build_images(self.client, say=log.info, log_path=self.run_dir / "images-build.log")
        node_image, zk_image = self.images["node"], self.images["zookeeper"]
        self.zookeepers = [DockerZooKeeper(i, self, zk_image, self._zoo_cfg())
                           for i in range(1, self.spec.zookeepers + 1)]
        self.controllers = {i: DockerController(i, self, node_image, self._controller_config)
                            for i in range(1, self.spec.controllers + 1)}
        self.brokers = {i: DockerBroker(i, self, node_image, self._broker_config,
                                        also_ready=lambda i=i: self._broker_registered(i))
                        for i in range(1, self.spec.brokers + 1)}

    def _prepare(self) -> None:
        self._make_nodes()
        self.network = self.client.networks.create(self.network_name, driver="bridge",
                                                   labels={RUN_LABEL: self.run_id})

    def _start_zookeeper(self, timeout: float) -> None:
        for z in self.zookeepers:
            z.start(wait=False)
        for z in self.zookeepers:
            z.wait_ready(timeout)

    def _start_proxies(self) -> None:
        assert self.images is not None
        client_ports = tuple(CLIENT_PROXY_BASE + i for i in self.brokers)
        self.proxy = DockerProxy(self, self.images["proxy"], self.spec.seed, client_ports)
        self.proxy.start()
        self.proxy_url = self.proxy.url
        self.router = DockerProxiedRouter(ToxiproxyClient(self.proxy_url), self.proxy)

    def stop(self) -> None:
        """Remove brokers, controllers, ZooKeeper, the proxy, then the network; safe to call twice."""
        nodes = [*reversed(self.brokers.values()), *reversed(self.controllers.values()),
                 *reversed(self.zookeepers), *([self.proxy] if self.proxy else [])]
        if self.view is not None:
            self.view.close()  # before ZooKeeper goes, so its session ends quietly
            self.view = None
        for node in nodes:
            try:
                node.remove()
            except Exception as e:  # keep removing the rest
                log.error("removing %s: %r", node.name, e)
        if self.network is not None:
            try:
                self.network.remove()
            except Exception as e:
                log.error("removing network %s: %r", self.network_name, e)
            self.network = None
        reaper.terminate(self._reaper, 30)  # it removes whatever is left of the run, then exits
        self._reaper = None

    # --- what the cluster is -----------------------------------------------------------------
    @property
    def nodes(self) -> list[Any]:  # type: ignore[override]
        proxy = [self.proxy] if self.proxy is not None else []
        return [*proxy, *self.zookeepers, *self.controllers.values(), *self.brokers.values()]

    @property
    def zookeeper_connect(self) -> str:
        return ",".join(z.address for z in self.zookeepers)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "network": self.network_name,
                "images": dict(self.images or {})}

    @property
    def bootstrap_servers(self) -> str:
        """The brokers' addresses as the test process uses them (published ports or client proxies)."""
        return ",".join(host_port(self.router.address(CLIENT, b.name, b.internal_address))
                        for b in self.brokers.values())
