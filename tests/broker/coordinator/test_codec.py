"""The `__consumer_offsets` record encoding."""
from __future__ import annotations

import pytest

from chaoskit.broker.coordinator import codec


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
