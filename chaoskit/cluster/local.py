"""LocalCluster: ZooKeeper, controllers and brokers of one ClusterSpec as child processes.

    with LocalCluster(ClusterSpec(brokers=3, controllers=2)) as cluster:
        cluster.bootstrap_servers   # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        cluster.broker(2).kill(); cluster.broker(2).start(clean=False)

Start order is ZooKeeper, controllers, brokers; stop order the reverse. Ready means by condition:
ZooKeeper answers `srvr` with a mode, a controller is elected, every broker printed READY, is
registered in ZooKeeper and answers Metadata with every broker of the cluster (so a client can
bootstrap from any of them). A reaper process watches the runner and kills every process of the
run if the runner dies without stopping them. Every address a node uses for another node comes
from the spec's Router, so each path can go through its own fault proxy.
"""
from __future__ import annotations

import json
import logging
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka.protocol.metadata import MetadataRequest

from chaoskit.cluster import reaper
from chaoskit.cluster.node import Lifecycle, Node, stop_each
from chaoskit.cluster.processes import BrokerNode, ConfigNode, ControllerNode
from chaoskit.cluster.proxy_node import ProxyRouting, ProxyServer
from chaoskit.cluster.spec import ClusterSpec, Router, host_port
from chaoskit.cluster.waiting import wait_for
from chaoskit.cluster.zk_view import ZkView
from chaoskit.cluster.zookeeper import ZooKeeperEnsemble
from chaoskit.protocol.wire_client import WireClient
from chaoskit.protocol.zk_layout import PartitionState

log = logging.getLogger("chaoskit.cluster")


class LocalCluster(ProxyRouting, Lifecycle):
    backend = "local"
    reaper_module = "chaoskit.cluster.reaper"

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.run_id = spec.run_id
        self.run_dir = spec.directory
        self.zookeeper = ZooKeeperEnsemble(spec.zookeepers, spec.run_id, self.run_dir, spec.host)
        self.controllers: dict[int, ControllerNode] = {
            i: ControllerNode(i, spec.run_id, self.run_dir, self._controller_config)
            for i in range(1, spec.controllers + 1)}
        self.brokers: dict[int, BrokerNode] = {
            i: BrokerNode(i, spec.run_id, self.run_dir, spec.host, self._broker_config,
                          also_ready=lambda i=i: self._broker_registered(i))
            for i in range(1, spec.brokers + 1)}
        self.view: ZkView | None = None
        self.router: Router = spec.router
        self.proxy: ProxyServer | None = None  # our proxy server, when proxied without a proxy_url
        self.proxy_url: str | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None

    # --- configs -----------------------------------------------------------------------------
    def _zk_connect_for(self, name: str) -> str:
        return ",".join(host_port(self.router.address(name, z.name, (z.host, z.ports.client)))
                        for z in self.zookeeper.nodes)

    def _routed(self, source: str, targets: dict[int, BrokerNode]) -> dict[str, str]:
        """Addresses of brokers as `source` must use them, only where they differ from the real one
        (an unlisted broker is reached at the address it registered)."""
        out = {}
        for bid, b in targets.items():
            routed = self.router.address(source, b.name, b.address)
            if routed != b.address:
                out[str(bid)] = host_port(routed)
        return out

    def _broker_config(self, node: ConfigNode) -> dict[str, Any]:
        assert isinstance(node, BrokerNode)
        generated = {
            "broker.id": node.broker_id,
            "listeners": host_port(node.address),
            "advertised.listeners": host_port(self.router.address("client", node.name, node.address)),
            "log.dirs": str(node.data_dir),
            "request.log.path": str(node.home / "requests.log"),  # what clients sent: findings quote it
            "zookeeper.connect": self._zk_connect_for(node.name),
            "peer.addresses": self._routed(node.name, {i: b for i, b in self.brokers.items() if b is not node}),
        }
        return self.spec.config_for("broker", node.name, generated)

    def _controller_config(self, node: ConfigNode) -> dict[str, Any]:
        assert isinstance(node, ControllerNode)
        generated = {
            "controller.id": node.controller_id,
            "zookeeper.connect": self._zk_connect_for(node.name),
            "broker.addresses": self._routed(node.name, self.brokers),
        }
        return self.spec.config_for("controller", node.name, generated)

    # --- life cycle --------------------------------------------------------------------------
    def start(self) -> LocalCluster:
        began = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._start_reaper()
        self._prepare()
        timeout = self.spec.ready_timeout
        if self.spec.proxied:
            self._start_proxies()
        self._start_zookeeper(timeout)
        self.view = ZkView(self.zookeeper_connect)
        self._parallel(lambda n: n.start(), list(self.controllers.values()))
        self.wait_for_controller(timeout)
        self._parallel(lambda n: n.start(), list(self.brokers.values()))
        for broker in self.brokers.values():
            self.wait_for_metadata(broker, timeout)
        self.startup_seconds = time.monotonic() - began
        (self.run_dir / "cluster.json").write_text(json.dumps(self.describe(), indent=1) + "\n")
        log.info("%s cluster %s ready in %.1fs: %s", self.backend, self.run_id, self.startup_seconds, self.bootstrap_servers)
        return self

    def _prepare(self) -> None:
        """What a backend does before its nodes start (nothing here; images and a network for docker)."""

    def _start_zookeeper(self, timeout: float) -> None:
        self.zookeeper.start(timeout)

    @staticmethod
    def _parallel(action: Any, nodes: list[Node]) -> None:
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            for future in [pool.submit(action, n) for n in nodes]:
                future.result()  # re-raises the first failure (NotReady with the node's log)

    def stop(self) -> None:
        """Brokers, then controllers, then ZooKeeper, then the reaper; safe to call twice."""
        stop_each([*reversed(self.brokers.values()), *reversed(self.controllers.values())], log)
        if self.view is not None:
            self.view.close()
            self.view = None
        self.zookeeper.stop()
        if self.proxy is not None:
            self.proxy.stop()
        reaper.terminate(self._reaper)  # it reaps whatever is left, then exits
        self._reaper = None

    def client_address(self, broker_id: int) -> tuple[str, int]:
        """Where a client dials broker `broker_id`: its client proxy when proxied."""
        node = self.broker(broker_id)
        return self.router.address("client", node.name, node.address)

    def detach(self) -> None:
        """Leave the cluster running after this process ends (`--chaos-keep`): the reaper goes
        without reaping; `chaoskit cluster down RUN_ID` takes the processes down later."""
        if self._reaper is not None and self._reaper.poll() is None:
            self._reaper.kill()  # SIGKILL: it has no chance to reap
            self._reaper.wait()
        self._reaper = None
        if self.view is not None:
            self.view.close()
            self.view = None

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.poll() is not None:
            self._reaper = reaper.spawn(self.reaper_module, self.run_id, self.run_dir / "reaper.log")

    # --- readiness ---------------------------------------------------------------------------
    def _broker_registered(self, broker_id: int) -> bool:
        return self.view is not None and self.view.registered(broker_id)

    def wait_for_controller(self, timeout: float) -> int:
        """The active controller's id, once there is one."""
        assert self.view is not None
        logs = [c.log_path for c in self.controllers.values()]
        return wait_for(self.view.controller, timeout, "no controller was elected",
                        logs[0] if len(logs) == 1 else None) or 0

    def live_brokers_seen_by(self, broker: BrokerNode) -> set[int]:
        with WireClient(*broker.address, timeout=2.0, client_id="chaoskit-cluster") as client:
            response = client.request(MetadataRequest(topics=[]), version=1)
        return {b.node_id for b in response.brokers}

    def wait_for_metadata(self, broker: BrokerNode, timeout: float, expected: set[int] | None = None) -> None:
        """Until `broker` answers Metadata listing `expected` (default: every running broker)."""
        def complete() -> bool:
            want = expected if expected is not None else {i for i, b in self.brokers.items() if b.running}
            return self.live_brokers_seen_by(broker) == want
        wait_for(complete, timeout, f"{broker.name} does not list every live broker in its Metadata",
                 broker.log_path)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        assert self.view is not None
        return self.view.state(topic, partition)

    def leader_of(self, topic: str, partition: int) -> BrokerNode | None:
        state = self.partition_state(topic, partition)
        return self.brokers.get(state.leader) if state is not None else None

    def leaders_seen_by(self, broker: BrokerNode, topic: str) -> dict[int, int]:
        """{partition: leader} of `topic` as `broker` answers Metadata (what a client bootstrapping there learns)."""
        with WireClient(*broker.address, timeout=2.0, client_id="chaoskit-cluster") as client:
            response = client.request(MetadataRequest(topics=[topic], allow_auto_topic_creation=False), version=7)
        return {p.partition_index: p.leader_id for t in response.topics for p in t.partitions}

    def wait_until_replicated(self, topic: str, timeout: float = 30.0) -> dict[int, PartitionState]:
        """Until every partition of `topic` has a running leader and every running replica in its ISR,
        and every running broker's Metadata names those leaders (so a client asking any broker, a
        group leader assigning partitions say, sees the whole topic)."""
        states = self._wait_isrs(topic, timeout)
        leaders = {p: s.leader for p, s in states.items()}
        for broker in self.brokers.values():
            if broker.running and not broker.paused:
                wait_for(lambda: self.leaders_seen_by(broker, topic) == leaders, timeout,
                         f"{broker.name}'s Metadata naming the leaders {leaders} of {topic}", broker.log_path)
        return states

    def _wait_isrs(self, topic: str, timeout: float) -> dict[int, PartitionState]:
        assert self.view is not None
        view = self.view

        def replicated() -> dict[int, PartitionState] | None:
            assignment = view.assignment(topic)
            if not assignment:
                return None
            states = {p: view.state(topic, p) for p in assignment}
            for p, replicas in assignment.items():
                s = states[p]
                running = {r for r in replicas if self.brokers[r].running}
                if s is None or s.leader not in running or not running <= set(s.isr):
                    return None
            return states  # type: ignore[return-value]
        return wait_for(replicated, timeout, lambda: f"topic {topic} fully replicated (now "
                        f"{ {p: view.state(topic, p) for p in (view.assignment(topic) or {})} })")

    # --- what the cluster is -----------------------------------------------------------------
    def broker(self, broker_id: int) -> BrokerNode:
        return self.brokers[broker_id]

    def controller(self, controller_id: int) -> ControllerNode:
        return self.controllers[controller_id]

    def active_controller(self) -> ControllerNode | None:
        cid = self.view.controller() if self.view is not None else None
        return self.controllers.get(cid) if cid is not None else None

    @property
    def nodes(self) -> list[Node]:
        proxy = [self.proxy] if self.proxy is not None else []
        return [*proxy, *self.zookeeper.nodes, *self.controllers.values(), *self.brokers.values()]

    @property
    def bootstrap_servers(self) -> str:
        """The brokers' addresses as clients use them (their proxies when routed)."""
        return ",".join(host_port(self.router.address("client", b.name, b.address)) for b in self.brokers.values())

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string

    def describe(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "backend": self.backend,
            "run_dir": str(self.run_dir),
            "profile": self.spec.profile,
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper": self.zookeeper_connect,
            "startup_seconds": None if self.startup_seconds is None else round(self.startup_seconds, 3),
            "reaper_pid": self._reaper.pid if self._reaper is not None else None,
            "nodes": [n.describe() for n in self.nodes],
            **self._describe_proxies(),
        }
