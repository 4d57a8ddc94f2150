"""Fixtures for the controller's own tests: a real ZooKeeper, real controller processes, and
recording broker endpoints.

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

from chaoskit.cluster.processes import ConfigNode, ControllerNode
from chaoskit.cluster.waiting import wait_for
from chaoskit.cluster.zookeeper import ZooKeeperEnsemble
from chaoskit.controller import zk_layout as zl
from chaoskit.protocol.internal import (LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, LeaderAndIsrResponse,
                                        StopReplicaResponse, UpdateMetadataResponse)
from chaoskit.protocol.registry import decode_request, encode_response

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
