"""KIP-253 §9's tombstones at the rate they need (client/tombstones.py, one module, its requests
canned): one per (key, old partition), again only after a failed send or a change of the old
partition's leader, and none (nor a ListOffsets) once the old partition's start passed the threshold."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from chaoskit.client import tombstones as module
from chaoskit.client.admin import PartitionInfo, TopicInfo
from chaoskit.client.tombstones import CompactionTombstones
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.wire_client import WireError

THRESHOLD = 9  # the last offset of P2's epoch before P1 (partition 2, split from 0) was created


def topic(p0_epoch: int = 3) -> TopicInfo:
    parts = {p: PartitionInfo(p, 1, p0_epoch if p == 0 else 1, (1, 2), (1, 2)) for p in range(3)}
    return TopicInfo("t", ErrorCode.NONE, parts, initial_partition_count=2, undeleted_partition_count=3,
                     compacted=True)


@pytest.fixture
def canned(monkeypatch) -> dict[str, Any]:
    """The old partition's log start (ListOffsets, counted) and the tombstones sent."""
    state: dict[str, Any] = {"start": 0, "asked": 0, "sent": [], "fail": False}

    def list_offset(_conn: Any, _topic: str, _partition: int, _timestamp: int) -> Any:
        state["asked"] += 1
        return SimpleNamespace(error_code=ErrorCode.NONE, offset=state["start"])

    def send(topic_name: str, partition: int, key: bytes) -> None:
        if state["fail"]:
            raise WireError("the old partition's leader closed the connection")
        state["sent"].append((topic_name, partition, key))

    monkeypatch.setattr(module, "list_offset", list_offset)
    state["tombstones"] = CompactionTombstones(SimpleNamespace(connection=lambda _leader: None), send)
    monkeypatch.setattr(state["tombstones"], "_threshold", lambda info, partition: (0, THRESHOLD))
    return state


def test_one_tombstone_per_key_and_old_partition(canned):
    t = canned["tombstones"]
    assert t.after_send(topic(), 2, b"k1") == 0
    assert t.after_send(topic(), 2, b"k1") is None and t.after_send(topic(), 2, b"k1") is None
    assert t.after_send(topic(), 2, b"k2") == 0
    assert canned["sent"] == [("t", 0, b"k1"), ("t", 0, b"k2")] and canned["asked"] == 2


def test_again_after_a_failed_send_or_a_leader_change_of_the_old_partition(canned):
    t = canned["tombstones"]
    canned["fail"] = True
    with pytest.raises(WireError):
        t.after_send(topic(), 2, b"k1")
    canned["fail"] = False
    assert t.after_send(topic(), 2, b"k1") == 0  # the failed one did not count
    assert t.after_send(topic(), 2, b"k1") is None
    assert t.after_send(topic(p0_epoch=4), 2, b"k1") == 0  # a new leader of P2 may not hold it
    assert canned["sent"] == [("t", 0, b"k1")] * 2


def test_none_once_the_old_partitions_start_passed_the_threshold_and_it_is_not_asked_again(canned):
    t = canned["tombstones"]
    canned["start"] = THRESHOLD + 1
    assert t.after_send(topic(), 2, b"k1") is None
    assert t.after_send(topic(), 2, b"k2") is None and t.after_send(topic(p0_epoch=5), 2, b"k3") is None
    assert canned["sent"] == [] and canned["asked"] == 1
