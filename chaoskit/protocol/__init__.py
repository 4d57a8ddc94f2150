"""Every format two processes agree on: the Kafka wire protocol as the broker speaks it, and the
contracts the broker, the controller and the clients share below it.

The wire: a request registry keyed by API key over kafka-python's schema classes, framing, the KIP
extensions (tagged fields, private API keys and error codes), the record-batch helpers (CRC32C,
base offset and leader-epoch patching, control batches) and one-partition requests; docs/protocol.md
records every key, tag and code chosen. The shared contracts: the ZooKeeper layout (`zk_layout`),
topic-name rules and the coordinator partition hash (`topics`), and the config value parsers of
both node processes (`node_config`). It imports no other chaoskit package.
"""
