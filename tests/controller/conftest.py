"""Fixtures for the controller's own tests: a real ZooKeeper, real controller processes, and
recording broker endpoints; and for the proposals' end-to-end tests, real 3-broker clusters
(kip_cluster) with the tools that probe them (kip).

A RecordingBroker is the broker side of the controller's wire only: it registers
`/brokers/ids/<id>` in its own ZooKeeper session (closing the session is its death), accepts
LeaderAndIsr/UpdateMetadata/StopReplica over TCP, records them and answers success. It can hold
its answers back to play a hung broker. The real brokers are exercised with the controller in
tests/cluster/test_e2e_*.py.
"""
from __future__ import annotations

import itertools
import json
import socket
import struct
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.processes import ConfigNode, ControllerNode
from chaoskit.cluster.waiting import wait_for
from chaoskit.cluster.zookeeper import ZooKeeperEnsemble
from chaoskit.protocol import zk_layout as zl
from chaoskit.protocol.internal import (LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, LeaderAndIsrResponse,
                                        StopReplicaResponse, UpdateMetadataResponse)
from chaoskit.protocol.registry import decode_request, encode_response
from chaoskit.protocol.wire_client import WireClient

SESSION_MS = 2000  # short, so a killed controller's /controller goes quickly


class RecordingBroker:
    def __init__(self, broker_id: int, zk_connect: str) -> None:
        self.broker_id, self.zk_connect = broker_id, zk_connect
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received: list[tuple[int, Any]] = []
        self.answering = threading.Event()
        self.answering.set()
        self._lock = threading.Lock()
        self._closed = False
        self.zk: KazooClient | None = None
        threading.Thread(target=self._accept, daemon=True).start()

    # --- ZooKeeper life ----------------------------------------------------------------------
    def register(self) -> None:
        self.zk = KazooClient(hosts=self.zk_connect, timeout=4.0)
        self.zk.start(timeout=15)
        reg = zl.BrokerRegistration(self.broker_id, "127.0.0.1", self.port, ("127.0.0.1", self.port))
        self.zk.create(zl.broker_path(self.broker_id), reg.encode(), ephemeral=True, makepath=True)

    def die(self) -> None:
        """Its session closes, so /brokers/ids/<id> goes at once."""
        if self.zk is not None:
            self.zk.stop()
            self.zk.close()
            self.zk = None

    def close(self) -> None:
        self.die()
        self._closed = True
        self.answering.set()
        self.listener.close()

    # --- the wire ----------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as stream:
            while len(size := stream.read(4)) == 4:
                payload = stream.read(struct.unpack(">i", size)[0])
                header, request = decode_request(payload)
                self.answering.wait()
                if self._closed:
                    return
                with self._lock:
                    self.received.append((header.request_api_key, request))
                conn.sendall(encode_response(header, self._answer(header.request_api_key)))

    @staticmethod
    def _answer(api_key: int) -> Any:
        if api_key == LEADER_AND_ISR:
            return LeaderAndIsrResponse(error_code=0, topics=[])
        if api_key == UPDATE_METADATA:
            return UpdateMetadataResponse(error_code=0)
        if api_key == STOP_REPLICA:
            return StopReplicaResponse(error_code=0, topics=[])
        raise AssertionError(f"unexpected api key {api_key}")

    def requests(self, api_key: int) -> list[Any]:
        with self._lock:
            return [r for k, r in self.received if k == api_key]

    def partition_states(self, api_key: int = LEADER_AND_ISR) -> list[tuple[str, Any]]:
        """(topic, partition state) of every LeaderAndIsr/UpdateMetadata received, in order."""
        return [(t.topic_name, s) for r in self.requests(api_key) for t in r.topics for s in t.partition_states]

    def latest(self, topic: str, partition: int, api_key: int = LEADER_AND_ISR) -> Any | None:
        states = [s for t, s in self.partition_states(api_key) if t == topic and s.partition_index == partition]
        return states[-1] if states else None


class ControllerHarness:
    """One test's world: a ZooKeeper chroot, its brokers and controllers."""

    def __init__(self, zk_connect: str, workdir: Path) -> None:
        self.connect, self.workdir = zk_connect, workdir
        self.zk = KazooClient(hosts=zk_connect, timeout=10.0)
        self.zk.start(timeout=15)
        self.brokers: dict[int, RecordingBroker] = {}
        self.controllers: dict[int, ControllerNode] = {}
        self.run_id = f"ctl-test-{uuid.uuid4().hex[:8]}"

    def broker(self, broker_id: int, register: bool = True) -> RecordingBroker:
        b = self.brokers.get(broker_id) or RecordingBroker(broker_id, self.connect)
        self.brokers[broker_id] = b
        if register:
            b.register()
        return b

    def controller(self, controller_id: int, **config: Any) -> ControllerNode:
        def build(_node: ConfigNode) -> dict[str, Any]:
            return {"controller.id": controller_id, "zookeeper.connect": self.connect,
                    "zookeeper.session.timeout.ms": SESSION_MS, "controller.request.timeout.ms": 1000, **config}
        node = ControllerNode(controller_id, self.run_id, self.workdir, build)
        self.controllers[controller_id] = node
        node.start()
        return node

    def active(self) -> int | None:
        try:
            return zl.decode_controller(self.zk.get(zl.CONTROLLER)[0])
        except Exception:
            return None

    def epoch(self) -> int:
        return zl.decode_epoch(self.zk.get(zl.CONTROLLER_EPOCH)[0])

    def create_topic(self, topic: str, assignment: dict[int, list[int]], config: dict[str, str] | None = None) -> None:
        self.zk.create(zl.topic_config_path(topic), zl.encode_topic_config(config or {}), makepath=True)
        self.zk.create(zl.topic_path(topic), zl.TopicAssignment(assignment).encode(), makepath=True)

    def state(self, topic: str, partition: int) -> zl.PartitionState | None:
        try:
            return zl.PartitionState.decode(topic, partition, self.zk.get(zl.state_path(topic, partition))[0])
        except Exception:
            return None

    def wait_state(self, topic: str, partition: int, cond: Callable[[zl.PartitionState], bool],
                   what: str, timeout: float = 15.0) -> zl.PartitionState:
        log = next(iter(self.controllers.values())).log_path if self.controllers else None
        return wait_for(lambda: (s := self.state(topic, partition)) is not None and cond(s) and s,
                        timeout, f"{topic}-{partition}: {what} (now {self.state(topic, partition)})", log)

    def close(self) -> None:
        for c in self.controllers.values():
            c.stop()
        for b in self.brokers.values():
            b.close()
        self.zk.stop()
        self.zk.close()


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    with ZooKeeperEnsemble(1, "controller-tests", tmp_path_factory.mktemp("zk")) as zk:
        yield zk


_roots = itertools.count(1)


@pytest.fixture
def harness(zookeeper: ZooKeeperEnsemble, tmp_path: Path) -> Iterator[ControllerHarness]:
    chroot = f"/ctl{next(_roots)}"
    admin = KazooClient(hosts=zookeeper.connect_string)
    admin.start(timeout=15)
    admin.ensure_path(chroot)
    admin.stop()
    admin.close()
    h = ControllerHarness(zookeeper.connect_string + chroot, tmp_path)
    try:
        yield h
    finally:
        h.close()


@pytest.fixture
def controller_cli(tmp_path: Path) -> Callable[[dict[str, Any] | str], tuple[int, str]]:
    """Run `python -m chaoskit.controller` on a config that should be refused: (exit code, stderr)."""
    def run(config: dict[str, Any] | str) -> tuple[int, str]:
        path = tmp_path / "controller.json"
        path.write_text(config if isinstance(config, str) else json.dumps(config))
        proc = subprocess.run([sys.executable, "-m", "chaoskit.controller", "--config", str(path)],
                              capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stderr
    return run


# -- real 3-broker clusters for the proposals' end-to-end tests (test_e2e_*.py) -------------------
@pytest.fixture(scope="module")
def kip_cluster(make_cluster: Callable[..., Any]) -> Callable[..., Any]:
    """kip_cluster(profile="patched", controllers=2, controller_config=None, overrides=None) -> a
    started 3-broker LocalCluster with quick timeouts and a 300 ms partition-deletion tick; every
    cluster of the module is stopped at its end, even after a failure."""
    def make(profile: str = "patched", controllers: int = 2, controller_config: dict[str, Any] | None = None,
             overrides: dict[str, dict[str, Any]] | None = None) -> Any:
        return make_cluster(brokers=3, controllers=controllers, profile=profile, overrides=overrides or {},
                            controller_config={"delete.topic.partition.interval.delay.ms": 300,
                                               **(controller_config or {})})
    return make


@pytest.fixture(scope="module")
def cluster(kip_cluster: Callable[..., Any]) -> Any:
    """The module's patched KIP cluster (a module that needs another defines its own `cluster`)."""
    return kip_cluster()


@pytest.fixture(scope="module")
def admin(cluster: Any) -> Any:
    """chaoskit's admin client on the module's `cluster`."""
    with AdminClient(cluster.bootstrap_servers) as a:
        yield a


class KipTools:
    """What the proposals' end-to-end tests do to a cluster, over the wire and in ZooKeeper."""

    @staticmethod
    def produce(cluster: Any, admin: Any, topic: str, partition: int, values: list[bytes],
                undeleted: int = -1, mode_aware: bool = True) -> Any:
        """acks=all Produce v9 to the partition's leader, with KIP-253's count tag unless -1 and
        KIP-694's `mode_aware` (as the ordered client sends it, unless False); the partition's response."""
        from chaoskit.protocol.extensions import ProduceRequest
        from chaoskit.protocol.records import build_batch
        leader = admin.topic(topic).partitions[partition].leader
        D = ProduceRequest.TopicProduceData
        part = D.PartitionProduceData(index=partition, records=build_batch([(b"k", v) for v in values]))
        request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10_000, mode_aware=mode_aware, topic_data=[
            D(name=topic, undeleted_partition_count=undeleted, partition_data=[part])])
        with WireClient(*cluster.broker(leader).address, timeout=15) as c:
            return c.request(request, 9).responses[0].partition_responses[0]

    @staticmethod
    def fetch(cluster: Any, admin: Any, topic: str, partition: int, offset: int = 0, undeleted: int = -1) -> Any:
        """Fetch v12 (a consumer) at the partition's leader, with the count tag unless -1."""
        from chaoskit.protocol.extensions import FetchRequest
        leader = admin.topic(topic).partitions[partition].leader
        T = FetchRequest.FetchTopic
        request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[], topics=[T(
                                   topic=topic, undeleted_partition_count=undeleted, partitions=[T.FetchPartition(
                                       partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                       log_start_offset=-1, partition_max_bytes=1 << 20)])])
        with WireClient(*cluster.broker(leader).address, timeout=15) as c:
            return c.request(request, 12).responses[0].partitions[0]

    @staticmethod
    def values(fetched: Any) -> list[bytes]:
        from chaoskit.protocol.records import decode_records, split_batches
        return [r.value for b in split_batches(bytes(fetched.records or b"")) for r in decode_records(b)]

    @staticmethod
    def znode(cluster: Any, topic: str) -> zl.TopicAssignment | None:
        got = cluster.view.client.exists(zl.topic_path(topic)) and cluster.view.client.get(zl.topic_path(topic))
        return zl.TopicAssignment.decode(topic, got[0]) if got else None

    @staticmethod
    def state_znodes(cluster: Any, topic: str) -> dict[int, zl.PartitionState]:
        try:
            children = cluster.view.client.get_children(zl.partitions_path(topic))
        except Exception:
            return {}
        states = {int(p): cluster.view.state(topic, int(p)) for p in children}
        return {p: s for p, s in states.items() if s is not None}

    @staticmethod
    def directories(cluster: Any, topic: str, partition: int) -> list[str]:
        """The brokers (by name) that still have the partition's log directory."""
        return [b.name for b in cluster.brokers.values() if (b.data_dir / f"{topic}-{partition}").exists()]

    @classmethod
    def consistent(cls, cluster: Any, topic: str) -> str | None:
        """None when ZooKeeper and every broker's Metadata agree on the topic and every epoch map
        has been bumped past; else what disagrees (for wait_for's message)."""
        from chaoskit.client.admin import AdminClient
        znode, states = cls.znode(cluster, topic), cls.state_znodes(cluster, topic)
        if znode is None:
            return "no topic znode"
        if set(states) != set(znode.partitions):
            return f"state znodes {sorted(states)} != assignment {sorted(znode.partitions)}"
        for p, s in states.items():
            if s.leader not in cluster.brokers or not cluster.broker(s.leader).running:
                return f"partition {p} has no running leader ({s.leader})"
            for q, e in {**s.after_creation, **s.before_deletion}.items():
                if q in states and q < znode.undeleted and states[q].leader_epoch <= e:
                    return f"partition {q} at epoch {states[q].leader_epoch}, not past {e} named by {p}'s map"
        for b in cluster.brokers.values():
            if not b.running:
                continue
            with AdminClient("%s:%d" % b.address) as admin:
                info = admin.topic(topic)
            seen = {p: (i.leader, i.leader_epoch, i.mode) for p, i in info.partitions.items()}
            want = {p: (s.leader, s.leader_epoch, s.mode) for p, s in states.items()}
            if seen != want or (info.initial_partition_count, info.undeleted_partition_count) != \
                    (znode.initial_partition_count, znode.undeleted_partition_count):
                return f"{b.name} shows {seen} counts {info.initial_partition_count}/{info.undeleted_partition_count}"
        return None

    @classmethod
    def wait_consistent(cls, cluster: Any, topic: str, timeout: float = 30.0) -> None:
        last: list[str | None] = [None]

        def check() -> bool:
            last[0] = cls.consistent(cluster, topic)
            return last[0] is None
        logs = [c.log_path for c in cluster.controllers.values()]
        wait_for(check, timeout, lambda: f"topic {topic} consistent: {last[0]}", logs[-1], interval=0.2)


@pytest.fixture(scope="session")
def kip() -> type[KipTools]:
    """KipTools (test modules cannot import conftest under --import-mode=importlib)."""
    return KipTools
