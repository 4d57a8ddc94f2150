"""Kafka-style JSON message definitions of chaoskit's private APIs (docs/protocol.md, docs/internals.md §3).

Loaded by kafka-python's ApiMessage machinery (`class X(ApiMessage, load_json=...)`); the file
name is the class name.
"""
