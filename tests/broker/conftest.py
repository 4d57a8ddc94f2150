"""Fixtures for the broker's tests: a real ZooKeeper (chaoskit.cluster.zookeeper), real broker
processes (`python -m chaoskit.broker`), and a hand-driven controller that writes partition state
into ZooKeeper and sends LeaderAndIsr/UpdateMetadata over the wire, so the broker is tested alone.
"""
from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from chaoskit.cluster.processes import BrokerNode
from chaoskit.cluster.waiting import wait_for
from chaoskit.cluster.zookeeper import ZooKeeperEnsemble
from chaoskit.protocol.internal import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from chaoskit.protocol.wire_client import WireClient


class BrokerProcess(BrokerNode):
    """One `python -m chaoskit.broker` child (the cluster's BrokerNode) with test conveniences."""

    ready_timeout = 30.0

    def __init__(self, broker_id: int, zk_connect: str, workdir: Path, run_id: str = "broker-tests",
                 **overrides: Any) -> None:
        super().__init__(broker_id, run_id, workdir, "127.0.0.1", self._config)
        self.zk_connect, self.overrides = zk_connect, overrides

    def _config(self, node: Any) -> dict[str, Any]:
        return {"broker.id": self.broker_id, "listeners": f"127.0.0.1:{self.port}", "log.dirs": str(self.log_dir),
                "zookeeper.connect": self.zk_connect, "zookeeper.session.timeout.ms": 4000,
                "replica.fetch.wait.max.ms": 200, **self.overrides}

    @property
    def log_dir(self) -> Path:
        return self.data_dir

    def client(self, timeout: float = 10.0) -> WireClient:
        return WireClient(*self.address, timeout=timeout).connect()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass
class HandController:
    """Plays the controller: partition states go into ZooKeeper, then to the brokers over the wire."""

    zk: KazooClient
    brokers: dict[int, BrokerProcess]
    epoch: int = 1
    controller_id: int = 100
    leader_epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    states: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    offline: set[int] = field(default_factory=set)

    def create_topic(self, topic: str, assignment: dict[int, list[int]]) -> None:
        body = {"version": 2, "partitions": {str(p): r for p, r in assignment.items()}}
        self.zk.create(f"/brokers/topics/{topic}", json.dumps(body).encode(), makepath=True)
        for p, replicas in assignment.items():
            self.elect(topic, p, replicas[0], replicas, isr=replicas)

    def elect(self, topic: str, partition: int, leader: int, replicas: list[int], isr: list[int],
              send_to: list[int] | None = None) -> int:
        """Write a new leader epoch for the partition and tell its replicas and every broker; the epoch."""
        key = (topic, partition)
        epoch = self.leader_epochs.get(key, -1) + 1
        self.leader_epochs[key] = epoch
        state = {"version": 1, "controller_epoch": self.epoch, "leader": leader, "leader_epoch": epoch,
                 "isr": isr, "partition_epoch": 0}
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        data = json.dumps(state).encode()
        if self.zk.exists(path):
            self.zk.set(path, data)
        else:
            self.zk.create(path, data, makepath=True)
        self.states[key] = dict(state, replicas=replicas)
        targets = [b for b in replicas if send_to is None or b in send_to]
        for b in targets:
            self.leader_and_isr(b, [key])
        self.update_metadata([b for b in self.brokers if send_to is None or b in send_to])
        return epoch

    def follow_zookeeper(self) -> None:
        """One pass of what a controller does for admin requests: elect leaders for new topics and
        partitions (first replica leads), carry out pending deletions."""
        for topic in self.zk.get_children("/brokers/topics"):
            raw, _ = self.zk.get(f"/brokers/topics/{topic}")
            for p, replicas in json.loads(raw)["partitions"].items():
                if (topic, int(p)) not in self.states:
                    self.elect(topic, int(p), replicas[0], replicas, isr=replicas)
        for topic in self.zk.get_children("/admin/delete_topics") if self.zk.exists("/admin/delete_topics") else []:
            keys = [k for k in self.states if k[0] == topic]
            for b in {r for k in keys for r in self.states[k]["replicas"]}:
                self.stop_replicas(b, keys, delete=True)
            for k in keys:
                del self.states[k]
            self.update_metadata(list(self.brokers), deleted=[topic])
            self.zk.delete(f"/brokers/topics/{topic}", recursive=True)
            self.zk.delete(f"/config/topics/{topic}", recursive=True)
            self.zk.delete(f"/admin/delete_topics/{topic}")

    def stop_replicas(self, broker_id: int, keys: list[tuple[str, int]], delete: bool) -> Any:
        topics: dict[str, list[Any]] = {}
        for topic, p in keys:
            topics.setdefault(topic, []).append(StopReplicaRequest.StopReplicaTopicState.StopReplicaPartitionState(
                partition_index=p, leader_epoch=-2 if delete else self.states[(topic, p)]["leader_epoch"],
                delete=delete))
        request = StopReplicaRequest(controller_id=self.controller_id, controller_epoch=self.epoch, topics=[
            StopReplicaRequest.StopReplicaTopicState(topic_name=t, partitions=ps) for t, ps in topics.items()])
        with self.brokers[broker_id].client() as c:
            return c.request(request, 0)

    @contextmanager
    def following_zookeeper(self) -> Iterator[None]:
        """Run follow_zookeeper every 50 ms in a thread while the block runs."""
        stop = threading.Event()
        errors: list[BaseException] = []
        self.zk.ensure_path("/brokers/topics")

        def loop() -> None:
            while not stop.wait(0.05):
                try:
                    self.follow_zookeeper()
                except Exception as e:  # re-raised in the test's thread below
                    errors.append(e)
                    return

        thread = threading.Thread(target=loop, name="hand-controller", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(5)
        if errors:
            raise errors[0]

    def refresh_isr(self, topic: str, partition: int) -> list[int]:
        """The ISR as ZooKeeper has it now (a leader may have changed it)."""
        raw, _ = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        state = json.loads(raw)
        self.states[(topic, partition)].update(isr=state["isr"], partition_epoch=state["partition_epoch"])
        return state["isr"]

    def _partition_state(self, cls: Any, key: tuple[str, int], **extra: Any) -> Any:
        s = self.states[key]
        return cls(partition_index=key[1], controller_epoch=s["controller_epoch"], leader=s["leader"],
                   leader_epoch=s["leader_epoch"], isr=s["isr"], partition_epoch=s["partition_epoch"],
                   replicas=s["replicas"], **extra)

    def leader_and_isr(self, broker_id: int, keys: list[tuple[str, int]], epoch: int | None = None) -> Any:
        topics: dict[str, list[Any]] = {}
        for key in keys:
            topics.setdefault(key[0], []).append(self._partition_state(
                LeaderAndIsrRequest.LeaderAndIsrTopicState.LeaderAndIsrPartitionState, key, is_new=False))
        leaders = {self.states[k]["leader"] for k in keys} & set(self.brokers)
        request = LeaderAndIsrRequest(
            controller_id=self.controller_id, controller_epoch=self.epoch if epoch is None else epoch,
            topics=[LeaderAndIsrRequest.LeaderAndIsrTopicState(topic_name=t, partition_states=ps)
                    for t, ps in topics.items()],
            live_leaders=[LeaderAndIsrRequest.LeaderAndIsrLiveLeader(
                broker_id=b, host="127.0.0.1", port=self.brokers[b].port) for b in sorted(leaders)])
        with self.brokers[broker_id].client() as c:
            return c.request(request, 0)

    def update_metadata(self, broker_ids: list[int], epoch: int | None = None,
                        deleted: list[str] | None = None, broker_epoch: int = -1) -> list[Any]:
        topics: dict[str, list[Any]] = {}
        for key in self.states:
            topics.setdefault(key[0], []).append(self._partition_state(
                UpdateMetadataRequest.UpdateMetadataTopicState.UpdateMetadataPartitionState, key,
                offline_replicas=sorted(self.offline & set(self.states[key]["replicas"]))))
        request = UpdateMetadataRequest(
            controller_id=self.controller_id, controller_epoch=self.epoch if epoch is None else epoch,
            topics=[UpdateMetadataRequest.UpdateMetadataTopicState(topic_name=t, partition_states=ps)
                    for t, ps in topics.items()],
            live_brokers=[UpdateMetadataRequest.UpdateMetadataBroker(broker_id=b, host="127.0.0.1", port=p.port)
                          for b, p in sorted(self.brokers.items()) if b not in self.offline and p.running],
            deleted_topics=deleted or [], broker_epoch=broker_epoch)
        out = []
        for b in broker_ids:
            if self.brokers[b].running:
                with self.brokers[b].client() as c:
                    out.append(c.request(request, 0))
        return out


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    with ZooKeeperEnsemble(size=1, run_id="broker-tests", workdir=tmp_path_factory.mktemp("zk")) as ensemble:
        yield ensemble


_chroots = itertools.count(1)


@pytest.fixture
def zk_root(zookeeper: ZooKeeperEnsemble) -> Iterator[tuple[str, KazooClient]]:
    """A fresh chroot per test: (connect string with the chroot, a kazoo client inside it)."""
    chroot = f"/t{next(_chroots)}-{uuid.uuid4().hex[:6]}"
    admin = KazooClient(hosts=zookeeper.connect_string)
    admin.start(timeout=15)
    admin.ensure_path(chroot)
    admin.stop()
    client = KazooClient(hosts=zookeeper.connect_string + chroot)
    client.start(timeout=15)
    try:
        yield zookeeper.connect_string + chroot, client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def private_zookeeper(tmp_path: Path) -> Iterator[tuple[ZooKeeperEnsemble, KazooClient]]:
    """A ZooKeeper of this test's own (for tests that kill it) and a client of it."""
    with ZooKeeperEnsemble(size=1, run_id="broker-tests-private", workdir=tmp_path / "zk") as ensemble:
        client = KazooClient(hosts=ensemble.connect_string)
        client.start(timeout=15)
        try:
            yield ensemble, client
        finally:
            client.stop()
            client.close()


@pytest.fixture
def start_brokers(zk_root: tuple[str, KazooClient], tmp_path: Path) -> Iterator[Any]:
    """start_brokers(n, zk=(connect, client), **config) -> (HandController, {id: BrokerProcess}).

    Brokers use this test's chroot of the shared ZooKeeper unless zk names another; all are
    stopped at the end."""
    started: list[BrokerProcess] = []

    def start(n: int = 1, zk: tuple[str, KazooClient] | None = None,
              **overrides: Any) -> tuple[HandController, dict[int, BrokerProcess]]:
        connect, client = zk or zk_root
        brokers = {i: BrokerProcess(i, connect, tmp_path, **overrides) for i in range(1, n + 1)}
        for b in brokers.values():
            started.append(b)
            b.start()
        wait_for(lambda: len(client.get_children("/brokers/ids")) == n, 15, "brokers registered")
        controller = HandController(client, brokers)
        controller.update_metadata(list(brokers))
        return controller, brokers

    try:
        yield start
    finally:
        for b in reversed(started):
            b.stop()


from chaoskit.protocol.requests import epoch_end, fetch, list_offset, produce  # noqa: E402


@pytest.fixture
def wire() -> Any:
    """The request helpers above (test modules cannot import conftest under --import-mode=importlib)."""
    from types import SimpleNamespace
    return SimpleNamespace(produce=produce, fetch=fetch, list_offset=list_offset, epoch_end=epoch_end)
