"""The ordered-delivery client: the proposals' producer and consumer side (docs/client.md).

`producer.OrderedProducer` (linear hashing, the undeleted count in Produce, KIP-694 partition
modes), `consumer.OrderedConsumer` (KIP-253 group assignment, gates and key callbacks, KIP-320
truncation handling), `admin.AdminClient`, and the pieces they share: `linear_hash`, `routing`,
`metadata`, `group`, `assignor`, `gates`, `truncation`, `tombstones`, `events`. Built on
kafka-python's protocol classes over chaoskit's WireClient.
"""
