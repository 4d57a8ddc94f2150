"""The restore read: after a run, every partition of each compacted topic read from its start to
its end, as an application rebuilding a table from the topic would, and recorded as one
`restore` op per record the log still holds (process "restore", type ok, with its topic,
partition, offset, key and value). What compaction left is what such a reader gets back: the
`moved-value-kept` check (KIP-253 §9) reads these ops. A stock kafka-python consumer reads, so the
verdict rests on the log, not on what the client under test says of itself.
"""
from __future__ import annotations

from typing import Any, Callable

from chaoskit.client.events import history_key, history_value
from chaoskit.cluster.waiting import wait_for
from chaoskit.history.schema import RESTORE_PROCESS

READ_TIMEOUT_S = 30.0


def restore_read(bootstrap_servers: str, topics: list[str], record: Callable[[dict[str, Any]], Any]) -> int:
    """Read `topics` from their start to their end offsets now; record each record as an op. The
    number of records read."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False,
                             client_id="chaoskit-restore")
    read = 0
    try:
        tps = [TopicPartition(t, p) for t in topics
               for p in sorted(wait_for(lambda t=t: consumer.partitions_for_topic(t), 10,
                                        f"restore read: the partitions of {t}"))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)

        def read_to_the_end() -> bool:
            nonlocal read
            for tp, records in consumer.poll(200).items():
                for r in records:
                    record({"process": RESTORE_PROCESS, "type": "ok", "f": "restore", "topic": tp.topic,
                            "partition": tp.partition, "offset": r.offset, "key": history_key(r.key),
                            "value": history_value(r.value)})
                read += len(records)
            return all(consumer.position(tp) >= ends[tp] for tp in tps)
        wait_for(read_to_the_end, READ_TIMEOUT_S, lambda: f"restore read of {topics} to the end offsets {ends}")
        return read
    finally:
        consumer.close()
