"""Kafka's group -> partition mapping (Java's String hash, Utils.abs) and the topic-name rule."""
from __future__ import annotations

import pytest

from chaoskit.protocol.topics import java_string_hashcode, legal_topic_name, partition_for


@pytest.mark.parametrize("s,expected", [
    ("", 0),
    ("hello", 99162322),  # values Java 17's String.hashCode gave
    ("console-consumer-1", 35782224),
    ("orders-group", -403968617),
    ("polygenelubricants", -2**31),
    ("\U0001F600", 1772899),  # a surrogate pair hashes as two UTF-16 units
])
def test_java_string_hashcode_matches_java(s, expected):
    assert java_string_hashcode(s) == expected


def test_partition_for_is_kafkas_abs_hash_modulo():
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 7) == 0, "Utils.abs(Integer.MIN_VALUE) is 0"
    assert partition_for("orders-group", 50) == 17, "Java: Math.abs(-403968617) % 50"
    with pytest.raises(ValueError, match="positive"):
        partition_for("g", 0)


def test_legal_topic_names_are_kafkas_and_stay_inside_log_dirs():
    assert all(map(legal_topic_name, ["orders", "a.b_c-1", "x" * 249, "..."]))
    assert not any(map(legal_topic_name, ["", ".", "..", "x" * 250, "a/b", "../up", "t p", "é"]))


def test_cleanup_policy_is_the_topics_else_the_brokers_and_compacts_when_it_has_compact():
    from chaoskit.protocol.topics import cleanup_policy, compacted
    assert cleanup_policy({"cleanup.policy": "compact, delete"}) == {"compact", "delete"}
    assert compacted({"cleanup.policy": "compact,delete"}) and compacted({"cleanup.policy": "compact"})
    assert not compacted({"cleanup.policy": "delete"}) and not compacted({})
    assert compacted({}, default="compact") and not compacted({"cleanup.policy": "delete"}, default="compact")
