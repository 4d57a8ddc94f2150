"""A read-mostly view of a cluster through ZooKeeper: who is controller at which epoch, which
brokers are registered, each partition's state. The backend's readiness checks and tests use it.
"""
from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from chaoskit.protocol import zk_layout as zl
from chaoskit.protocol.zk_layout import PartitionState


class ZkView:
    def __init__(self, connect: str, timeout: float = 15.0) -> None:
        self.client = KazooClient(hosts=connect, timeout=10.0)
        self.client.start(timeout=timeout)

    def close(self) -> None:
        self.client.stop()
        self.client.close()

    def _get(self, path: str) -> bytes | None:
        try:
            return self.client.get(path)[0]
        except NoNodeError:
            return None

    def controller(self) -> int | None:
        data = self._get(zl.CONTROLLER)
        return None if data is None else zl.decode_controller(data)

    def controller_epoch(self) -> int:
        return zl.decode_epoch(self._get(zl.CONTROLLER_EPOCH))

    def brokers(self) -> list[int]:
        try:
            return sorted(int(c) for c in self.client.get_children(zl.BROKER_IDS) if c.isdigit())
        except NoNodeError:
            return []

    def registered(self, broker_id: int) -> bool:
        return self.client.exists(zl.broker_path(broker_id)) is not None

    def topics(self) -> list[str]:
        try:
            return sorted(self.client.get_children(zl.TOPICS))
        except NoNodeError:
            return []

    def topic(self, topic: str) -> zl.TopicAssignment | None:
        """The topic's znode: its partitions' replicas and KIP-253's counts."""
        data = self._get(zl.topic_path(topic))
        return None if data is None else zl.TopicAssignment.decode(topic, data)

    def assignment(self, topic: str) -> dict[int, list[int]] | None:
        found = self.topic(topic)
        return None if found is None else found.partitions

    def state(self, topic: str, partition: int) -> PartitionState | None:
        data = self._get(zl.state_path(topic, partition))
        return None if data is None else PartitionState.decode(topic, partition, data)

    def set_topic_config(self, topic: str, config: dict[str, str]) -> None:
        path = zl.topic_config_path(topic)
        data = zl.encode_topic_config(config)
        if self.client.exists(path):
            self.client.set(path, data)
        else:
            self.client.create(path, data, makepath=True)
