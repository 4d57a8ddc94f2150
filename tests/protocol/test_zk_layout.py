"""The ZooKeeper codecs: round trips, Kafka's shapes, unknown fields kept, clear errors."""
from __future__ import annotations

import json

import pytest

from chaoskit.protocol import zk_layout as zl
from chaoskit.protocol.extensions import PartitionMode


def test_partition_state_round_trip_keeps_unknown_fields():
    raw = json.dumps({"version": 1, "controller_epoch": 2, "leader": 3, "leader_epoch": 9, "isr": [3, 1],
                      "partition_epoch": 4, "futureField": {"a": 1}}).encode()
    s = zl.PartitionState.decode("t", 0, raw)
    assert (s.leader, s.leader_epoch, s.isr, s.controller_epoch, s.partition_epoch) == (3, 9, [3, 1], 2, 4)
    again = json.loads(s.evolve(leader=1).encode())
    assert again["futureField"] == {"a": 1} and again["leader"] == 1
    assert "mode" not in again and "leaderEpochAfterCreation" not in again  # untouched by the proposals


def test_partition_state_kip_fields():
    raw = json.dumps({"version": 1, "controller_epoch": 2, "leader": 3, "leader_epoch": 9, "isr": [3],
                      "leaderEpochAfterCreation": {"0": 4, "1": 7}, "leaderEpochBeforeDeletion": {"2": 5},
                      "mode": 1, "delete_at_ms": 1234}).encode()
    s = zl.PartitionState.decode("t", 6, raw)
    assert s.after_creation == {0: 4, 1: 7} and s.before_deletion == {2: 5}
    assert s.mode == PartitionMode.READ_ONLY and s.marked_for_deletion and s.delete_at_ms == 1234 and s.extra == {}
    again = json.loads(s.evolve(leader_epoch=10, mode=PartitionMode.NONE).encode())
    assert again["leaderEpochAfterCreation"] == {"0": 4, "1": 7} and again["mode"] == -1
    assert again["leader_epoch"] == 10 and again["delete_at_ms"] == 1234
    with pytest.raises(zl.ZkDataError, match="mode 7 is not one of"):
        zl.PartitionState.decode("t", 0, json.dumps({**json.loads(raw), "mode": 7}).encode())
    with pytest.raises(zl.ZkDataError, match="leaderEpochBeforeDeletion must map"):
        zl.PartitionState.decode("t", 0, json.dumps({**json.loads(raw), "leaderEpochBeforeDeletion": [1]}).encode())


def test_assignment_round_trip_counts_and_extra_fields():
    raw = b'{"version":2,"partitions":{"1":[2,3],"0":[1,2]},"initial_partition_count":2,"other":true}'
    a = zl.TopicAssignment.decode("t", raw)
    assert a.partitions == {0: [1, 2], 1: [2, 3]} and a.extra == {"other": True}
    assert a.initial_partition_count == 2 and a.undeleted_partition_count is None and a.undeleted == 2
    assert json.loads(a.encode()) == {"version": 2, "partitions": {"0": [1, 2], "1": [2, 3]},
                                       "initial_partition_count": 2, "other": True}
    shrunk = a.evolve(undeleted_partition_count=1, delete_partitions_delay_ms=-1)
    assert zl.TopicAssignment.decode("t", shrunk.encode()) == shrunk and shrunk.undeleted == 1
    assert "undeleted_partition_count" not in json.loads(zl.TopicAssignment({0: [1]}).encode())
    with pytest.raises(zl.ZkDataError, match="undeleted_partition_count must be an integer"):
        zl.TopicAssignment.decode("t", b'{"partitions":{},"undeleted_partition_count":"2"}')


def test_broker_registration_has_kafka_shape_and_internal_address():
    reg = zl.BrokerRegistration(4, "127.0.0.1", 9000, ("127.0.0.1", 9100))
    obj = json.loads(reg.encode())
    assert obj["endpoints"] == ["PLAINTEXT://127.0.0.1:9000"] and obj["internal"] == "127.0.0.1:9100"
    assert zl.BrokerRegistration.decode(4, reg.encode()) == reg


@pytest.mark.parametrize("path_fn,decode,raw,message", [
    (lambda: zl.state_path("t", 0), lambda r: zl.PartitionState.decode("t", 0, r), b"{not json",
     "/brokers/topics/t/partitions/0/state: not JSON"),
    (lambda: zl.state_path("t", 0), lambda r: zl.PartitionState.decode("t", 0, r), b'{"leader":1}',
     "missing field(s) leader_epoch, isr, controller_epoch"),
    (lambda: zl.topic_path("t"), lambda r: zl.TopicAssignment.decode("t", r), b'{"partitions":{"x":[1]}}',
     "partitions must map"),
    (lambda: zl.CONTROLLER_EPOCH, zl.decode_epoch, b"abc", "expected a decimal number"),
])
def test_bad_znodes_are_named_in_the_error(path_fn, decode, raw, message):
    with pytest.raises(zl.ZkDataError) as err:
        decode(raw)
    assert message in str(err.value) and (path_fn() in str(err.value))
