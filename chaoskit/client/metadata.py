"""The clients' view of the cluster: Metadata with the KIP fields, connections by broker id, and
a freeze switch for the chaos "stale metadata" fault.

Built on the AdminClient's wire layer (one blocking WireClient per broker). While frozen,
`refresh()` keeps the last answer, so the client goes on with an old `undeleted_partition_count`
and old leaders exactly as a client whose metadata requests are lost would.

Each refresh asks the next broker in turn, and a topic whose answer shows a partition at a lower
leader epoch than one already seen is kept as it was (KIP-320's epochs in Metadata): a broker the
controller no longer updates, a zombie, would otherwise be all the client ever hears from when it
comes first in the bootstrap list. (A topic deleted and created again under the same name starts
its epochs over; this view would keep the old one, which no run does.)

Each refresh also reads the topics' `enable.ordered.delivery` and `cleanup.policy` (one
DescribeConfigs, from the same broker) into `TopicInfo.ordered_delivery` and `TopicInfo.compacted`:
where the first is false the client skips KIP-253's steps for the topic (client/routing.py
`ordered`); where the policy has `compact` the producer sends KIP-253 §9's tombstones
(client/tombstones.py). A topic whose config could not be read keeps the values last read, or the
defaults (ordered, not compacted) until they are.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import replace

from chaoskit.client.admin import AdminClient, TopicInfo
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.topics import CLEANUP_POLICY, ORDERED_DELIVERY, compacted, ordered_delivery
from chaoskit.protocol.wire_client import WireClient, WireError

log = logging.getLogger(__name__)


class MetadataError(Exception):
    """A topic the client needs is missing or not usable."""


def _older(info: TopicInfo, known: TopicInfo | None) -> bool:
    """Does `info` show some partition at a lower leader epoch than `known` did? (a stale answer)
    A partition `known` had marked for deletion is left out: it may have been removed and made
    again by an expansion since, a new partition whose epochs start again at 0."""
    if known is None:
        return False
    return any(p in known.partitions and known.partitions[p].mode == PartitionMode.READ_WRITE
               and part.leader_epoch < known.partitions[p].leader_epoch for p, part in info.partitions.items())


class ClusterView:
    def __init__(self, bootstrap_servers: str | Iterable[str], client_id: str, timeout_s: float = 10.0) -> None:
        self.admin = AdminClient(bootstrap_servers, timeout_s=timeout_s, client_id=client_id)
        self.timeout_s = timeout_s
        self.topics: dict[str, TopicInfo] = {}
        self.frozen = False
        self.refreshed_at = 0.0
        self.ordered_delivery: dict[str, bool] = {}  # topic -> its enable.ordered.delivery as last read
        self.compacted: dict[str, bool] = {}  # topic -> whether its cleanup.policy, as last read, compacts

    def freeze(self) -> None:
        self.frozen = True

    def thaw(self) -> None:
        self.frozen = False

    def refresh(self, topics: Iterable[str]) -> dict[str, TopicInfo]:
        """Ask for `topics` again (kept as they were while frozen, when known)."""
        wanted = sorted(set(topics))
        if self.frozen and all(t in self.topics for t in wanted):
            return self.topics
        try:
            answer = self.admin.metadata(wanted)
            self._read_topic_configs([n for n, i in answer.items() if i.error == ErrorCode.NONE])
        finally:
            self.admin.start_from_next_broker()  # the next refresh asks another broker
        for name, info in answer.items():
            if info.error == ErrorCode.NONE and not _older(info, self.topics.get(name)):
                self.topics[name] = replace(info, ordered_delivery=self.ordered_delivery.get(name, True),
                                            compacted=self.compacted.get(name, False))
        self.refreshed_at = time.monotonic()
        return self.topics

    def _read_topic_configs(self, topics: list[str]) -> None:
        if not topics:
            return
        try:
            configs = self.admin.topic_configs(topics, [ORDERED_DELIVERY, CLEANUP_POLICY])
        except WireError as e:  # metadata came: go on with what was read before
            log.info("topic configs not read (%s); keeping %s and %s", e, self.ordered_delivery, self.compacted)
            return
        for name, config in configs.items():
            if ORDERED_DELIVERY in config:
                self.ordered_delivery[name] = ordered_delivery(config)
            if CLEANUP_POLICY in config:  # the broker's answer already falls back to log.cleanup.policy
                self.compacted[name] = compacted(config)

    def topic(self, name: str, timeout_s: float | None = None) -> TopicInfo:
        """The topic as last seen; asked for (until `timeout_s`) when not known yet."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while name not in self.topics:
            self.refresh([name])
            if name in self.topics:
                break
            if time.monotonic() >= deadline:
                raise MetadataError(f"topic {name!r} is not in the cluster's metadata (create it first)")
            time.sleep(0.1)
        return self.topics[name]

    def connection(self, broker_id: int) -> WireClient:
        """The connection to a broker by id (asks Metadata for its address when unknown)."""
        if broker_id not in self.admin._brokers:
            self.admin.metadata([])
        address = self.admin._brokers.get(broker_id)
        if address is None:
            raise MetadataError(f"broker {broker_id} is not in the cluster's metadata")
        return self.admin._client(address)

    def any_connection(self) -> WireClient:
        return self.admin._client(self.admin.bootstrap[0])

    def close(self) -> None:
        self.admin.close()
