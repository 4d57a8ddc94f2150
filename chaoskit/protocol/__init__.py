"""The Kafka wire protocol as the broker speaks it.

A request registry keyed by API key over kafka-python's schema classes, framing,
the KIP extensions (tagged fields, private API keys and error codes) and the
record-batch helpers (CRC32C, base offset and leader-epoch patching, control
batches). docs/protocol.md records every key, tag and code chosen.
"""
