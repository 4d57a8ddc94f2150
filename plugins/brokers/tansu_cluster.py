"""TansuCluster: tansu brokers as local processes over one storage engine, every path proxied.

    cluster = TansuCluster("local", spec, test)   # test.broker_storage: sqlite, postgres or memory
    cluster.start(); cluster.bootstrap_servers; cluster.brokers[1].kill(); cluster.stop()

Clients reach each broker through its own proxy (`c-b1`), and over PostgreSQL each broker reaches
the database through its own (`b1-st1`), so a fault can cut, slow or reset the path to storage of
one broker. PostgreSQL is chaoskit's own server (storage-1: a node like any other, to kill and
restart), with chaoskit's schema loaded. A broker is ready when it answers Metadata.

What tansu 0.6.0 is, as chaoskit sees it: each broker names only itself in Metadata, as node 111,
leading every partition; a client stays on the broker it bootstrapped from. So the cluster maps
"the leader" of a partition to the first running broker (any of them serves it), and there is no
ZooKeeper view and no controller. Deliberate: the cluster is what faults and checks use of any
broker (chaoskit.roles.Cluster) and nothing of what only chaoskit's own has.
"""
from __future__ import annotations

import json
import logging
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.protocol.metadata import MetadataRequest

from chaoskit.cluster import capabilities as caps
from chaoskit.cluster import reaper
from chaoskit.cluster.brokers import BrokerKind
from chaoskit.cluster.node import Lifecycle, Node, stop_each
from chaoskit.cluster.processes import RetriesTakenPort
from chaoskit.cluster.proxy_node import ProxyRouting, ProxyServer
from chaoskit.cluster.spec import host_port
from chaoskit.cluster.waiting import free_port, wait_for
from chaoskit.protocol.wire_client import WireClient
from chaoskit_plugins.brokers import tansu
from chaoskit_plugins.brokers.postgres import PostgresNode

log = logging.getLogger("chaoskit.cluster")
SCHEMA = Path(__file__).with_name("tansu_schema.sql")
DATABASE = "tansu"


@dataclass(frozen=True)
class PartitionInfo:
    """A partition as a broker's Metadata gives it (the fields of chaoskit's PartitionState that any
    broker can tell: its leader, epoch and ISR)."""

    leader: int
    leader_epoch: int
    isr: list[int]


class TansuNode(RetriesTakenPort, Node):
    role = "broker"
    ready_timeout = 30.0

    def __init__(self, broker_id: int, run_id: str, workdir: Path, host: str, cluster: TansuCluster) -> None:
        super().__init__(f"broker-{broker_id}", run_id, workdir)
        self.broker_id, self.host, self.cluster = broker_id, host, cluster
        self.port = free_port(host)
        self.home = self.workdir / self.name

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    @property
    def run_in(self) -> Path:
        return self.home  # a SQLite engine's file is named relative to the broker's folder

    def env(self) -> dict[str, str]:
        # its warnings and errors (a panic's backtrace included), without colour codes: at `info` a
        # broker writes some 2,500 lines a second under a workload
        return {**super().env(), "RUST_LOG": "warn", "NO_COLOR": "1", "RUST_BACKTRACE": "1"}

    def prepare(self, clean: bool) -> None:
        if clean and self.home.exists():
            shutil.rmtree(self.home)
        self.home.mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return self.cluster.command_for(self)

    def is_ready(self) -> bool:
        try:
            with WireClient(*self.address, timeout=2.0, client_id="chaoskit-cluster") as client:
                return client.request(MetadataRequest(topics=[]), version=1) is not None
        except OSError:
            return False

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "id": self.broker_id, "address": "%s:%d" % self.address, "data": str(self.home)}


def tansu_broker() -> BrokerKind:
    """tansu as chaoskit tests it: the Kafka core, and a storage service of its own over PostgreSQL."""
    return BrokerKind("tansu", tansu.TITLE, frozenset(), TansuCluster, tansu.STORAGES,
                      {"postgres": frozenset({caps.STORAGE})}, tansu.unavailable, tansu.max_brokers, ("local",))


class TansuCluster(ProxyRouting, Lifecycle):
    backend = "local"
    reaper_module = "chaoskit.cluster.reaper"

    def __init__(self, backend: str, spec: Any, test: Any = None) -> None:
        if backend != "local":
            raise ValueError(f"{tansu.TITLE} runs on the local backend only (processes), not {backend!r}")
        self.spec, self.run_id, self.run_dir = spec, spec.run_id, spec.directory
        self.storage = getattr(test, "broker_storage", None) or tansu.STORAGES[0]
        if spec.brokers > tansu.max_brokers(self.storage):
            raise ValueError(f"{tansu.TITLE} over {self.storage} serves one broker; {spec.brokers} asked for")
        self.cluster_id = f"chaoskit-{spec.run_id}"
        self.brokers: dict[int, TansuNode] = {
            i: TansuNode(i, spec.run_id, self.run_dir, spec.host, self) for i in range(1, spec.brokers + 1)}
        self.controllers: dict[int, Any] = {}
        self.postgres = PostgresNode(spec.run_id, self.run_dir, spec.host, name="storage-1") \
            if self.storage == "postgres" else None
        self.view = None  # no ZooKeeper: what needs it is refused before a run starts
        self.router: Any = spec.router
        self.proxy: ProxyServer | None = None
        self.proxy_url: str | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None

    # --- how a broker is started -------------------------------------------------------------
    def command_for(self, node: TansuNode) -> list[str]:
        advertised = self.router.address("client", node.name, node.address)
        postgres = None
        if self.postgres is not None:
            postgres = self.router.address(node.name, self.postgres.name, self.postgres.address)
        return tansu.command(node.address, advertised, tansu.storage_url(self.storage, node.home, postgres, DATABASE),
                             self.cluster_id)

    # --- life cycle --------------------------------------------------------------------------
    def start(self) -> TansuCluster:
        why = tansu.unavailable(self.storage)
        if why:
            raise ValueError(why)
        began = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._reaper = reaper.spawn(self.reaper_module, self.run_id, self.run_dir / "reaper.log")
        if self.spec.proxied:
            self._start_proxies()
        if self.postgres is not None:
            self.postgres.start()
            self.postgres.psql(f"create database {DATABASE};")
            self.postgres.psql(SCHEMA.read_text(), DATABASE)
        for broker in self.brokers.values():
            broker.start()
        self.startup_seconds = time.monotonic() - began
        (self.run_dir / "cluster.json").write_text(json.dumps(self.describe(), indent=1) + "\n")
        log.info("%s cluster %s ready in %.1fs: %s", tansu.TITLE, self.run_id, self.startup_seconds,
                 self.bootstrap_servers)
        return self

    def stop(self) -> None:
        """Brokers, then storage, then the proxy and the reaper; safe to call twice."""
        stop_each([*reversed(self.brokers.values()), *([self.postgres] if self.postgres else [])], log)
        if self.proxy is not None:
            self.proxy.stop()
        reaper.terminate(self._reaper)
        self._reaper = None

    def detach(self) -> None:
        if self._reaper is not None and self._reaper.poll() is None:
            self._reaper.kill()
            self._reaper.wait()
        self._reaper = None

    # --- what clients and faults ask -----------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        return [*([self.proxy] if self.proxy else []), *([self.postgres] if self.postgres else []),
                *self.brokers.values()]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(host_port(self.router.address("client", b.name, b.address)) for b in self.brokers.values())

    def client_address(self, broker_id: int) -> tuple[str, int]:
        node = self.brokers[broker_id]
        return self.router.address("client", node.name, node.address)

    def _serving(self) -> TansuNode | None:
        return next((b for b in self.brokers.values() if b.running and not b.paused), None)

    def partitions_seen_by(self, broker: TansuNode, topic: str) -> dict[int, PartitionInfo]:
        """{partition: its leader (as this cluster numbers brokers), epoch and ISR} as `broker`'s Metadata says."""
        with WireClient(*broker.address, timeout=2.0, client_id="chaoskit-cluster") as client:
            response = client.request(MetadataRequest(topics=[topic], allow_auto_topic_creation=False), version=7)
        out = {}
        for t in response.topics:
            for p in t.partitions:
                if p.error_code == 0 and p.leader_id >= 0:
                    # tansu names itself (node 111) as every partition's leader: the broker asked leads
                    out[p.partition_index] = PartitionInfo(broker.broker_id, p.leader_epoch,
                                                           [broker.broker_id] if p.isr_nodes else [])
        return out

    def partition_state(self, topic: str, partition: int) -> PartitionInfo | None:
        broker = self._serving()
        if broker is None:
            return None
        try:
            return self.partitions_seen_by(broker, topic).get(partition)
        except OSError:
            return None

    def leader_of(self, topic: str, partition: int) -> TansuNode | None:
        state = self.partition_state(topic, partition)
        return self.brokers.get(state.leader) if state is not None else None

    def active_controller(self) -> None:
        return None  # no controller apart from the brokers

    def wait_until_replicated(self, topic: str, timeout: float = 30.0) -> dict[int, PartitionInfo]:
        """Until every running broker's Metadata gives every partition of `topic` a leader."""
        seen: dict[int, PartitionInfo] = {}
        for broker in self.brokers.values():
            if broker.running and not broker.paused:
                seen = wait_for(lambda b=broker: self.partitions_seen_by(b, topic) or None, timeout,
                                f"{broker.name}'s Metadata naming {topic}'s partitions", broker.log_path)
        return seen

    def describe(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "backend": self.backend, "broker": tansu.TITLE, "storage": self.storage,
                "run_dir": str(self.run_dir), "profile": self.spec.profile, "bootstrap_servers": self.bootstrap_servers,
                "startup_seconds": None if self.startup_seconds is None else round(self.startup_seconds, 3),
                "reaper_pid": self._reaper.pid if self._reaper is not None else None,
                "nodes": [n.describe() for n in self.nodes], **self._describe_proxies()}
