"""What the group coordinator writes to `__consumer_offsets`.

Records are key/value pairs. Every key and every non-null value is a 2-byte big-endian schema
version followed by compact UTF-8 JSON (keys sorted, so one logical key is always the same bytes):

- offset: key version 1, `{"group","topic","partition"}`; value version 0,
  `{"offset","leader_epoch","metadata","commit_timestamp"}`
- group: key version 2, `{"group"}`; value version 0, `{"protocol_type","generation","protocol",
  "leader","state_timestamp","members":[{"member_id","group_instance_id","client_id","client_host",
  "rebalance_timeout_ms","session_timeout_ms","subscription","assignment"}]}`

`subscription` and `assignment` are base64. A null value is a tombstone: the offset or the group is
gone. Key versions 1 and 2 follow Kafka's (offset keys < 2, group key 2) so a reader can tell them
apart the same way; the rest is ours, not Kafka's binary layout. A reader meeting a version it does
not know raises `CorruptRecord` (the loader logs and skips it).

Which partition a group lives in (`partition_for`) is chaoskit.protocol.topics: clients compute it too.
"""
from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass
from typing import Any

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
VALUE_VERSION = 0
_VERSION = struct.Struct(">h")


class CorruptRecord(ValueError):
    """A `__consumer_offsets` record this coordinator cannot read."""


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int  # -1: unknown
    metadata: str | None
    commit_timestamp_ms: int


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # the member's metadata for the group's protocol
    assignment: bytes


@dataclass(frozen=True)
class GroupRecord:
    protocol_type: str | None
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp_ms: int
    members: tuple[MemberRecord, ...]


@dataclass(frozen=True)
class OffsetEntry:
    group: str
    topic: str
    partition: int
    committed: CommittedOffset | None  # None: tombstone


@dataclass(frozen=True)
class GroupEntry:
    group: str
    record: GroupRecord | None  # None: tombstone


def _pack(version: int, obj: dict[str, Any]) -> bytes:
    return _VERSION.pack(version) + json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _unpack(raw: bytes, what: str) -> tuple[int, dict[str, Any]]:
    if len(raw) < _VERSION.size:
        raise CorruptRecord(f"{what} of {len(raw)} bytes has no version prefix")
    (version,) = _VERSION.unpack_from(raw)
    try:
        obj = json.loads(bytes(raw[_VERSION.size:]).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorruptRecord(f"{what} (version {version}) is not JSON: {e}") from e
    if not isinstance(obj, dict):
        raise CorruptRecord(f"{what} (version {version}) is not a JSON object")
    return version, obj


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _pack(OFFSET_KEY_VERSION, {"group": group, "topic": topic, "partition": partition})


def group_key(group: str) -> bytes:
    return _pack(GROUP_KEY_VERSION, {"group": group})


def offset_value(c: CommittedOffset) -> bytes:
    return _pack(VALUE_VERSION, {"offset": c.offset, "leader_epoch": c.leader_epoch, "metadata": c.metadata,
                                 "commit_timestamp": c.commit_timestamp_ms})


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def group_value(r: GroupRecord) -> bytes:
    members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "session_timeout_ms": m.session_timeout_ms, "subscription": _b64(m.subscription),
                "assignment": _b64(m.assignment)} for m in r.members]
    return _pack(VALUE_VERSION, {"protocol_type": r.protocol_type, "generation": r.generation,
                                 "protocol": r.protocol, "leader": r.leader,
                                 "state_timestamp": r.state_timestamp_ms, "members": members})


def _decode_value(value: bytes, what: str) -> dict[str, Any]:
    version, obj = _unpack(value, what)
    if version != VALUE_VERSION:
        raise CorruptRecord(f"{what} has value version {version}; this coordinator reads {VALUE_VERSION}")
    return obj


def decode(key: bytes, value: bytes | None) -> OffsetEntry | GroupEntry:
    """One record of `__consumer_offsets`; CorruptRecord when it is not ours or is damaged."""
    version, k = _unpack(key, "key")
    try:
        if version == OFFSET_KEY_VERSION:
            what = f"offset of {k['group']!r} {k['topic']}-{k['partition']}"
            if value is None:
                return OffsetEntry(k["group"], k["topic"], int(k["partition"]), None)
            v = _decode_value(value, what)
            return OffsetEntry(k["group"], k["topic"], int(k["partition"]),
                               CommittedOffset(int(v["offset"]), int(v["leader_epoch"]), v["metadata"],
                                               int(v["commit_timestamp"])))
        if version == GROUP_KEY_VERSION:
            if value is None:
                return GroupEntry(k["group"], None)
            v = _decode_value(value, f"group {k['group']!r}")
            members = tuple(MemberRecord(m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
                                         int(m["rebalance_timeout_ms"]), int(m["session_timeout_ms"]),
                                         base64.b64decode(m["subscription"]), base64.b64decode(m["assignment"]))
                            for m in v["members"])
            return GroupEntry(k["group"], GroupRecord(v["protocol_type"], int(v["generation"]), v["protocol"],
                                                      v["leader"], int(v["state_timestamp"]), members))
    except CorruptRecord:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptRecord(f"record with key version {version} lacks or mistypes a field: {e!r}") from e
    raise CorruptRecord(f"key version {version} is neither an offset (1) nor a group (2) key")
