"""The `__consumer_offsets` record encoding and Kafka's group -> partition mapping."""
from __future__ import annotations

import pytest

from chaoskit.broker.coordinator import codec


@pytest.mark.parametrize("s,expected", [
    ("", 0),
    ("hello", 99162322),  # values Java 17's String.hashCode gave
    ("console-consumer-1", 35782224),
    ("orders-group", -403968617),
    ("polygenelubricants", -2**31),
    ("\U0001F600", 1772899),  # a surrogate pair hashes as two UTF-16 units
])
def test_java_string_hashcode_matches_java(s, expected):
    assert codec.java_string_hashcode(s) == expected


def test_partition_for_is_kafkas_abs_hash_modulo():
    assert codec.partition_for("hello", 50) == 99162322 % 50
    assert codec.partition_for("polygenelubricants", 7) == 0, "Utils.abs(Integer.MIN_VALUE) is 0"
    assert codec.partition_for("orders-group", 50) == 17, "Java: Math.abs(-403968617) % 50"
    with pytest.raises(ValueError, match="positive"):
        codec.partition_for("g", 0)


def test_records_round_trip_and_keys_are_stable():
    c = codec.CommittedOffset(42, 7, "meta", 1234)
    assert codec.offset_key("g", "t", 3) == codec.offset_key("g", "t", 3)
    assert codec.decode(codec.offset_key("g", "t", 3), codec.offset_value(c)) == codec.OffsetEntry("g", "t", 3, c)
    assert codec.decode(codec.offset_key("g", "t", 3), None).committed is None
    member = codec.MemberRecord("m-1", "host-a", "client", "/127.0.0.1", 30000, 10000, b"\x00sub", b"\xffasg")
    group = codec.GroupRecord("consumer", 4, "range", "m-1", 99, (member,))
    assert codec.decode(codec.group_key("g"), codec.group_value(group)) == codec.GroupEntry("g", group)
    assert codec.decode(codec.group_key("g"), None) == codec.GroupEntry("g", None)


@pytest.mark.parametrize("key,value,reason", [
    (b"\x00", b"", "no version prefix"),
    (b"\x00\x07{}", None, "neither an offset"),
    (b"\x00\x01[1]", None, "not a JSON object"),
    (b"\x00\x01{\"group\":\"g\"}", None, "lacks or mistypes"),
    (codec.offset_key("g", "t", 0), b"\x00\x05{}", "value version 5"),
])
def test_unreadable_records_raise_corrupt_record_saying_why(key, value, reason):
    with pytest.raises(codec.CorruptRecord, match=reason):
        codec.decode(key, value)
