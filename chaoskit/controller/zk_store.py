"""The controller's reads and fenced writes in ZooKeeper.

Every write the active controller makes runs in a ZooKeeper transaction that first checks
`/controller_epoch` is still at the version this controller wrote when it won: a deposed
controller (paused, partitioned, its session gone) cannot overwrite its successor's decisions.
Partition state writes are also conditional on the znode's version, so a leader's concurrent ISR
change is never lost: the caller re-reads and decides again.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError, RolledBackError

from chaoskit.protocol import zk_layout as zl
from chaoskit.protocol.zk_layout import BrokerRegistration, PartitionState, TopicAssignment

log = logging.getLogger("chaoskit.controller.zk")

Watch = Callable[[Any], None] | None


class ControllerFenced(Exception):
    """/controller_epoch moved on: another controller has won; this one must stop acting."""


class StateConflict(Exception):
    """The partition state znode changed (or appeared) since it was read; re-read and decide again."""


class ControllerZk:
    def __init__(self, client: KazooClient) -> None:
        self.client = client
        self.epoch_zk_version: int | None = None  # set once this controller is active

    # --- reads -------------------------------------------------------------------------------
    def children(self, path: str, watch: Watch = None) -> list[str]:
        try:
            return sorted(self.client.get_children(path, watch=watch))
        except NoNodeError:
            self.client.ensure_path(path)  # so that the watch can be set on it
            return sorted(self.client.get_children(path, watch=watch))

    def brokers(self, watch: Watch = None) -> dict[int, tuple[BrokerRegistration, int]]:
        """Live brokers: id -> (registration, czxid); a new czxid for a known id means it re-registered."""
        out: dict[int, tuple[BrokerRegistration, int]] = {}
        for child in self.children(zl.BROKER_IDS, watch):
            if not child.isdigit():
                continue
            try:
                data, stat = self.client.get(zl.broker_path(int(child)))
                out[int(child)] = (BrokerRegistration.decode(int(child), data), stat.czxid)
            except NoNodeError:
                continue  # went away between the listing and the read; its watch event follows
            except zl.ZkDataError as e:
                log.error("ignoring broker %s: %s", child, e)
        return out

    def assignment(self, topic: str, watch: Watch = None) -> tuple[TopicAssignment, int] | None:
        """(assignment, znode version), or None when the topic znode does not exist."""
        try:
            data, stat = self.client.get(zl.topic_path(topic), watch=watch)
        except NoNodeError:
            return None
        return TopicAssignment.decode(topic, data), stat.version

    def state(self, topic: str, partition: int) -> tuple[PartitionState, int] | None:
        try:
            data, stat = self.client.get(zl.state_path(topic, partition))
        except NoNodeError:
            return None
        return PartitionState.decode(topic, partition, data), stat.version

    def topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = self.client.get(zl.topic_config_path(topic))
        except NoNodeError:
            return {}
        return zl.decode_topic_config(topic, data)

    def isr_change(self, name: str) -> list[tuple[str, int]]:
        path = f"{zl.ISR_CHANGE}/{name}"
        try:
            data, _ = self.client.get(path)
        except NoNodeError:
            return []
        try:
            return zl.decode_isr_change(path, data)
        except zl.ZkDataError as e:
            log.error("ignoring %s", e)
            return []

    # --- fenced writes -----------------------------------------------------------------------
    def _commit(self, build: Callable[[Any], None]) -> list[Any]:
        if self.epoch_zk_version is None:
            raise ControllerFenced("this controller is not active")
        tx = self.client.transaction()
        tx.check(zl.CONTROLLER_EPOCH, self.epoch_zk_version)
        build(tx)
        results = tx.commit()
        # a failing op makes the others RolledBackError: only a failed check itself means fenced
        if isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
            raise ControllerFenced(f"{zl.CONTROLLER_EPOCH} is no longer at version {self.epoch_zk_version}")
        return results[1:]

    def create_state(self, topic: str, partition: int, state: PartitionState) -> int:
        """Create the state znode; its version (0). StateConflict when it already exists."""
        self.client.ensure_path(f"{zl.partitions_path(topic)}/{partition}")
        (result,) = self._commit(lambda tx: tx.create(zl.state_path(topic, partition), state.encode()))
        if isinstance(result, NodeExistsError):
            raise StateConflict(zl.state_path(topic, partition))
        if isinstance(result, Exception):
            raise result
        return 0

    def write_state(self, topic: str, partition: int, state: PartitionState, version: int) -> int:
        """Replace the state if still at `version`; the new version. StateConflict otherwise."""
        path = zl.state_path(topic, partition)
        (result,) = self._commit(lambda tx: tx.set_data(path, state.encode(), version=version))
        if isinstance(result, (BadVersionError, NoNodeError)):
            raise StateConflict(path)
        if isinstance(result, Exception):
            raise result
        return int(result.version)

    def write_assignment(self, topic: str, assignment: TopicAssignment, version: int) -> int:
        """Replace the topic znode if still at `version`; the new version. StateConflict otherwise."""
        path = zl.topic_path(topic)
        (result,) = self._commit(lambda tx: tx.set_data(path, assignment.encode(), version=version))
        if isinstance(result, (BadVersionError, NoNodeError)):
            raise StateConflict(path)
        if isinstance(result, Exception):
            raise result
        return int(result.version)

    def remove_partition(self, topic: str, partition: int, assignment: TopicAssignment, version: int) -> int:
        """In one transaction: the assignment without `partition` and its state znodes gone, so a
        successor never sees one without the other. The topic znode's new version; StateConflict
        when it moved on."""
        def build(tx: Any) -> None:
            tx.set_data(zl.topic_path(topic), assignment.encode(), version=version)
            tx.delete(zl.state_path(topic, partition))
            tx.delete(f"{zl.partitions_path(topic)}/{partition}")
        results = self._commit(build)
        if isinstance(results[0], (BadVersionError, NoNodeError)):
            raise StateConflict(zl.topic_path(topic))
        failed = next((r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)), None)
        if isinstance(failed, (NoNodeError, NotEmptyError)):
            raise StateConflict(zl.state_path(topic, partition))
        if failed is not None:
            raise failed
        return int(results[0].version)

    def delete_topic(self, topic: str) -> None:
        """Remove a deleted topic's znodes; the /admin/delete_topics marker goes last, so an
        interrupted deletion is found and finished by the next controller."""
        self._fence_check()
        try:
            self.client.delete(zl.topic_path(topic), recursive=True)
        except NoNodeError:
            pass
        for path in (zl.topic_config_path(topic), zl.delete_topic_path(topic)):
            self._fence_check()
            try:
                self.client.delete(path)
            except NoNodeError:
                pass
            except NotEmptyError:
                self.client.delete(path, recursive=True)

    def _fence_check(self) -> None:
        self._commit(lambda tx: None)

    def delete_isr_change(self, name: str) -> None:
        try:
            self.client.delete(f"{zl.ISR_CHANGE}/{name}")
        except NoNodeError:
            pass
