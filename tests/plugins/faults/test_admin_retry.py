"""The admin fault retries a retriable refusal as Kafka's AdminClient does, stops at a definite one,
takes a change an earlier attempt made as done, and acts on a broker whose metadata agrees with
ZooKeeper (a unit test: a scripted admin client)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from chaoskit.client.admin import AdminError
from chaoskit.cluster.waiting import NotReady
from chaoskit.protocol.errors import ErrorCode
from chaoskit_plugins.faults.cluster_faults import AdminFault, _settled, current_topic


class ScriptedAdmin:
    """Answers expand() from a script: an error code to raise, or None to grow the topic."""

    def __init__(self, *answers, partitions=6):
        self.answers, self.partitions, self.calls, self.rotations = list(answers), partitions, 0, 0

    def expand(self, topic, count):
        self.calls += 1
        code = self.answers.pop(0)
        if code is not None:
            raise AdminError(code, "scripted", f"expanding {topic!r}")
        self.partitions = count

    def topic(self, topic):
        return SimpleNamespace(partitions=dict.fromkeys(range(self.partitions)))

    def start_from_next_broker(self):
        self.rotations += 1


def change(admin):
    return AdminFault._change(None, admin, "expand", "orders", 8, None)


def test_a_retriable_refusal_is_retried_from_the_next_broker():
    admin = ScriptedAdmin(ErrorCode.REQUEST_TIMED_OUT, None)
    assert change(admin) == {} and (admin.calls, admin.rotations, admin.partitions) == (2, 1, 8)


def test_a_definite_refusal_ends_the_retries_at_once():
    admin = ScriptedAdmin(ErrorCode.INVALID_PARTITIONS)
    with pytest.raises(AdminError, match="INVALID_PARTITIONS"):
        change(admin)
    assert admin.calls == 1


def test_a_retry_that_finds_the_change_made_is_done():
    admin = ScriptedAdmin()

    def made_then_timed_out(topic, count):
        admin.calls += 1
        admin.partitions = count
        raise AdminError(ErrorCode.REQUEST_TIMED_OUT, "scripted", f"expanding {topic!r}")

    admin.expand = made_then_timed_out
    assert change(admin) == {} and admin.calls == 1  # no second request, which would be refused


def test_a_retry_refused_as_already_done_is_done_once_metadata_shows_it():
    # the first attempt timed out while a controller failover finished it; the retry's look at
    # metadata was still stale, so it asked again and was refused: the change was made
    admin = ScriptedAdmin(ErrorCode.REQUEST_TIMED_OUT, ErrorCode.INVALID_PARTITIONS)
    shown = iter([6, 6, 8])

    def topic(name):
        return SimpleNamespace(partitions=dict.fromkeys(range(next(shown, 8))))

    admin.topic = topic
    assert change(admin) == {} and admin.calls == 2


def test_a_first_refusal_is_not_taken_for_done():
    admin = ScriptedAdmin(ErrorCode.INVALID_PARTITIONS, partitions=8)  # the topic already had 8: refused
    with pytest.raises(AdminError, match="INVALID_PARTITIONS"):
        change(admin)


def test_a_refusal_of_a_change_the_topic_did_not_have_before_is_checked_against_metadata():
    # the AdminClient's own retry (inside one attempt) was refused: the change was made all the same
    admin = ScriptedAdmin(ErrorCode.INVALID_PARTITIONS, partitions=8)
    assert AdminFault._change(None, admin, "expand", "orders", 8, None, before=6) == {} and admin.calls == 1


def test_too_few_live_brokers_is_retried_until_one_is_back():
    # another fault holds a broker down: the expansion waits for it, as an operator would
    admin = ScriptedAdmin(ErrorCode.INVALID_REPLICATION_FACTOR, None)
    assert change(admin) == {} and (admin.calls, admin.partitions) == (2, 8)


class BrokersOfMixedAge:
    """Metadata from a round of brokers: each answers with the partition count it last heard."""

    def __init__(self, *counts):
        self.counts = list(counts)

    def topic(self, topic):
        n = self.counts[0]
        return SimpleNamespace(partitions=dict.fromkeys(range(n)), undeleted_partition_count=n,
                               marked_for_deletion=[])

    def start_from_next_broker(self):
        self.counts.append(self.counts.pop(0))


def zookeeper_with(count):
    state = SimpleNamespace(marked_for_deletion=False)
    topic = SimpleNamespace(partitions=dict.fromkeys(range(count)), undeleted_partition_count=count)
    return SimpleNamespace(view=SimpleNamespace(topic=lambda name: topic, state=lambda name, p: state))


def test_a_broker_that_missed_the_last_change_is_passed_over_for_one_that_agrees_with_zookeeper():
    brokers = BrokersOfMixedAge(4, 4, 8)  # two cut off from the controller while the topic grew to 8
    info = current_topic(brokers, zookeeper_with(8), "orders")
    assert info.undeleted_partition_count == 8 and brokers.counts[0] == 8


def test_no_broker_agreeing_with_zookeeper_in_time_is_an_error_not_a_stale_answer():
    with pytest.raises(NotReady, match="agrees with ZooKeeper"):
        current_topic(BrokersOfMixedAge(4, 4), zookeeper_with(8), "orders", within_s=0.6)


def test_a_shrink_asks_for_the_partitions_above_the_count_zookeeper_agreed_on():
    # the shrink's own look at Metadata could reach a broker that missed the growth to 8 (one a
    # fault cut off from the controller) and refuse "only 4 undeleted": the agreed count goes along
    asked = []

    def shrink(topic, count, delay_ms, immediate, undeleted=None):
        asked.append(list(range(count, undeleted)))
        return dict.fromkeys(asked[-1], "ReadOnly")

    admin = SimpleNamespace(shrink=shrink, start_from_next_broker=lambda: None)
    assert AdminFault._change(None, admin, "shrink", "orders", 6, None, before=8) == {6: "ReadOnly", 7: "ReadOnly"}
    assert asked == [[6, 7]]


def test_a_change_refused_as_done_is_looked_for_on_the_other_brokers_too():
    # the broker asked missed the growth (a fault cut it off from the controller): another shows it
    brokers = BrokersOfMixedAge(6, 6, 8)
    assert _settled(brokers, "expand", "orders", 8, within_s=2.0) == {} and brokers.counts[0] == 8
