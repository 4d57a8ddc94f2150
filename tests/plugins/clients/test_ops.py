"""What the built-in clients share (plugins/clients/ops.py): values on the wire, poll records,
outcomes and callbacks, as docs/history.md defines them."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from chaoskit_plugins.clients.ops import ClientBase, callback, failed, ok, poll_record, unwire, wire


def test_a_send_value_travels_as_compact_json_and_comes_back_equal():
    value = [2, "k17", 40]
    assert wire(value) == b'[2,"k17",40]'
    assert unwire(wire(value)) == value


def test_a_value_that_is_not_json_comes_back_as_text_and_none_stays_none():
    assert unwire(b"plain \xff text") == "plain \ufffd text"
    assert unwire(None) is None
    assert wire("already text") == b"already text"


def test_a_poll_record_is_partition_offset_key_value_epoch_and_drops_unknown_epochs():
    assert poll_record(3, 41, b"k1", b'[0,"k1",5]', 7) == [3, 41, "k1", [0, "k1", 5], 7]
    assert poll_record(3, 41, None, b'"x"', -1)[4] is None  # -1: the broker did not say
    assert poll_record(3, 41, None, b'"x"', None)[2] is None


def test_only_a_definite_error_is_fail_anything_else_is_info():
    op = {"f": "send", "type": "invoke", "value": [0, "k", 0]}
    assert failed(op, ValueError("refused"), definite=True)["type"] == "fail"
    info = failed(op, TimeoutError("no answer"), definite=False)
    assert info["type"] == "info" and info["error"] == "TimeoutError: no answer"
    assert ok(op, partition=1, offset=9) == {**op, "type": "ok", "partition": 1, "offset": 9}


def test_a_callback_is_one_ok_op_of_the_process_with_sorted_topic_partitions():
    seen = []
    tps = [SimpleNamespace(topic="orders", partition=2), SimpleNamespace(topic="orders", partition=0)]
    callback(seen.append, 4, "on_partitions_assigned", tps)
    assert seen == [{"process": 4, "type": "ok", "f": "on_partitions_assigned",
                     "value": [["orders", 0], ["orders", 2]]}]


def test_open_gives_each_process_its_own_client_with_the_same_options():
    proto = ClientBase(acks="all")
    test = SimpleNamespace(record=lambda op: None)
    a, b = proto.open(test, 0), proto.open(test, 1)
    assert a is not b and (a.process, b.process) == (0, 1) and a.options == b.options == {"acks": "all"}
    with pytest.raises(ValueError, match="does send, poll and committed"):
        a.invoke(test, {"f": "cas"})


class Polled(ClientBase):
    """Polls return the next record of partition 0; counts how often the library was asked."""

    def poll(self, op):
        self.asked = getattr(self, "asked", 0) + 1
        return ok(op, value=[[0, self.asked, None, [0, "k", self.asked], 0]])


def test_a_held_consumer_consumes_nothing_until_released_and_its_reads_are_tracked():
    client = Polled().open(SimpleNamespace(record=lambda op: None), 3)
    op = {"f": "poll", "topic": "t", "process": 3, "type": "invoke"}
    assert client.invoke(None, op)["value"] and client.delivered_to("t", 0) == 1
    client.hold()
    held = client.invoke(None, op)
    assert held["type"] == "ok" and held["value"] == [] and client.asked == 1  # the library was not asked
    client.release()
    assert client.invoke(None, op)["value"][0][1] == 2 and client.delivered_to("t", 0) == 2
    assert client.delivered_to("t", 1) == -1


def test_consumers_share_the_runs_group_unless_each_topic_gets_its_own():
    test = SimpleNamespace(record=lambda op: None, group_id="run-7")
    assert ClientBase().open(test, 0).group_for("a") == "run-7"
    per_topic = ClientBase(group_per_topic=True).open(test, 0)
    assert (per_topic.group_for("a"), per_topic.group_for("b")) == ("run-7-a", "run-7-b")


def test_a_send_acknowledged_without_an_offset_is_recorded_at_no_offset():
    """A broker may acknowledge a batch it found a duplicate of with offset -1 (tansu does): two such
    sends must not read as two values at offset -1."""
    op = {"f": "send", "process": 0, "value": [0, "k", 1]}
    assert ok(op, partition=1, offset=-1)["offset"] is None
    assert ok(op, partition=1, offset=0)["offset"] == 0
    assert ok(op, value=[])["type"] == "ok"
