"""The broker: `python -m chaoskit.broker`.

An asyncio server that speaks the Kafka protocol; on-disk partition logs in
segments; partitions and replication (followers fetch, ISR, high watermark,
KIP-320 fencing); the group coordinator; one handler per request type.
"""
