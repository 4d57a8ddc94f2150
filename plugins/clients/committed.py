"""The `committed` op: a consumer group's committed offsets of a topic, as the broker answers them.

Whatever library a process drives, the offsets are read through kafka-python's KafkaAdminClient
(OffsetFetch to the group's coordinator): what is judged is the broker's answer, not a client's
memory of its own commits. The op's value is {"group", "offsets": [[partition, offset], ...]}, an
offset of -1 where the group has none committed. The partitions are the topic's when first read.
"""
from __future__ import annotations

from typing import Any

REQUEST_TIMEOUT_MS = 5_000  # one read is one of many: a slow answer is left for the next


class CommittedReader:
    def __init__(self, bootstrap: str, client_id: str) -> None:
        self.bootstrap, self.client_id = bootstrap, client_id
        self._admin: Any = None
        self._partitions: dict[str, list[int]] = {}

    def read(self, topic: str, group: str) -> dict[str, Any]:
        """The op's value; raises what the read raised (the question went unanswered)."""
        from kafka import TopicPartition
        from kafka.admin import KafkaAdminClient

        try:
            if self._admin is None:
                self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id=self.client_id,
                                               request_timeout_ms=REQUEST_TIMEOUT_MS)
            if topic not in self._partitions:
                described = self._admin.describe_topics([topic])
                self._partitions[topic] = sorted(p["partition_index"] for d in described for p in d["partitions"])
            answer = self._admin.list_group_offsets({group: [TopicPartition(topic, p)
                                                             for p in self._partitions[topic]]})
        except Exception:
            self.close()  # a new client for the next read: kafka-python's keeps asking a coordinator that moved
            raise
        offsets = sorted([tp.partition, meta.offset] for tp, meta in answer.get(group, {}).items()
                         if tp.topic == topic)
        return {"group": group, "offsets": offsets}

    def close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            try:
                admin.close()
            except Exception:  # noqa: BLE001 -- closing one that broke
                pass
