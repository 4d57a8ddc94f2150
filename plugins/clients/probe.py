"""The `probe` client: asks one broker FindCoordinator for a group (the coordinator-probe workload).

It talks to the broker's client address (through its fault proxy), so a cut or paused broker gives
an `info` answer, never a made-up one. An answer with an error code is `fail`: nothing was claimed.

FindCoordinator names a node, not the `__consumer_offsets` partition behind it, and the partition
is what the `coordinator-split` check compares (a leader moving is not a split; two partitions are).
So the probe also asks the same broker for `__consumer_offsets`' leaders and keeps every partition
count the topic has shown: the partition is the group's partition (Kafka's placement) under the one
count whose leader is the node named. When no count or several explain the answer, the partition is
left out (null) and the check does not use that answer.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from chaoskit.client.admin import METADATA_VERSION
from chaoskit.protocol.topics import partition_for
from chaoskit.protocol.wire_client import WireClient
from chaoskit_plugins.clients.ops import ClientBase, Op, failed, ok

TIMEOUT_S = 5.0
OFFSETS = "__consumer_offsets"


class ProbeClient(ClientBase):
    name = "probe"
    library = "chaoskit"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._wire: dict[int, WireClient] = {}
        self.counts: set[int] = set()  # every partition count __consumer_offsets has shown

    def invoke(self, test: Any, op: Op) -> Op:
        if op["f"] != "coordinator":
            raise ValueError(f"probe client: no op {op['f']!r} (it does coordinator)")
        broker, group = op["node"], op["value"]["group"]
        try:
            wire = self._client(test, broker)
            answer = wire.request(FindCoordinatorRequest(key=group, key_type=0), 1)
            leaders = self._offsets_leaders(wire)
        except Exception as e:  # noqa: BLE001 -- a dead connection: we do not know what it would say
            self._drop(broker)
            return failed(op, e, definite=False)
        if answer.error_code != 0:
            return {**op, "type": "fail", "error": f"FindCoordinator error {answer.error_code}"}
        return ok(op, value={"group": group, "node": answer.node_id, "asked": broker,
                             "partition": self.partition_behind(group, answer.node_id, leaders)})

    def _offsets_leaders(self, wire: WireClient) -> dict[int, int]:
        wanted = [MetadataRequest.MetadataRequestTopic(name=OFFSETS, topic_id=None)]
        meta = wire.request(MetadataRequest(topics=wanted, allow_auto_topic_creation=False), METADATA_VERSION)
        leaders = {p.partition_index: p.leader_id for t in meta.topics if t.name == OFFSETS for p in t.partitions}
        if leaders:
            self.counts.add(len(leaders))
        return leaders

    def partition_behind(self, group: str, node: int, leaders: dict[int, int]) -> int | None:
        """The `__consumer_offsets` partition whose leader `node` is, under exactly one count seen."""
        candidates = {partition_for(group, c) for c in self.counts} & {p for p, n in leaders.items() if n == node}
        return candidates.pop() if len(candidates) == 1 else None

    def _client(self, test: Any, broker: int) -> WireClient:
        if broker not in self._wire:
            host, port = test.cluster.client_address(broker)
            self._wire[broker] = WireClient(host, port, timeout=TIMEOUT_S).__enter__()
        return self._wire[broker]

    def _drop(self, broker: int) -> None:
        wire = self._wire.pop(broker, None)
        if wire is not None:
            try:
                wire.close()
            except Exception:  # noqa: BLE001 -- already broken
                pass

    def close(self, test: Any) -> None:
        for broker in list(self._wire):
            self._drop(broker)
