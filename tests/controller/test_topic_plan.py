"""topic_plan: the pure KIP-253 / guardrail decisions, including what a successor controller
decides from every half-done state a crash can leave in ZooKeeper."""
from __future__ import annotations

from chaoskit.controller import topic_plan as plan
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.zk_layout import PartitionState, TopicAssignment

R = [1, 2, 3]


def topic(n: int, initial: int | None = 4, undeleted: int | None = None) -> TopicAssignment:
    return TopicAssignment({p: list(R) for p in range(n)}, initial_partition_count=initial,
                           undeleted_partition_count=n if undeleted is None else undeleted)


def st(epoch: int, **kw: object) -> PartitionState:
    return PartitionState(leader=1, leader_epoch=epoch, isr=list(R), controller_epoch=1, **kw)


def test_a_new_topic_is_not_an_expansion():
    assert not plan.is_expansion(topic(4), {})
    assert plan.partitions_to_create(topic(4), {}) == []
    assert plan.fixed_counts(TopicAssignment({0: R, 1: R}), {}) == TopicAssignment(
        {0: R, 1: R}, initial_partition_count=2, undeleted_partition_count=2)


def test_backfill_counts_an_old_topic_by_its_existing_partitions():
    a = TopicAssignment({p: list(R) for p in range(6)})  # 4 existed, 2 just added by a stock writer
    fixed = plan.fixed_counts(a, {p: st(0) for p in range(4)})
    assert (fixed.initial_partition_count, fixed.undeleted_partition_count) == (4, 6)
    assert plan.fixed_counts(topic(6), {p: st(0) for p in range(6)}) is None


def test_a_raw_expansion_that_left_the_count_behind_raises_it():
    fixed = plan.fixed_counts(topic(6, undeleted=4), {p: st(0) for p in range(4)})
    assert fixed.undeleted_partition_count == 6
    # partitions above U with states are a deletion, not an expansion
    assert plan.fixed_counts(topic(6, undeleted=4), {p: st(0) for p in range(6)}) is None


def test_expansion_creates_with_the_current_epochs_then_bumps_them():
    states = {0: st(3), 1: st(5), 2: st(0), 3: st(1)}
    a = topic(6)
    assert plan.partitions_to_create(a, states) == [4, 5]
    epochs = plan.expansion_epochs(a, states)
    assert epochs == {0: 3, 1: 5, 2: 0, 3: 1}
    created = {**states, 4: st(0, after_creation=epochs), 5: st(0, after_creation=epochs)}
    assert plan.partitions_to_bump(created) == [0, 1, 2, 3]


def test_a_successor_joins_a_half_created_expansion_and_bumps_only_what_is_left():
    before = {0: 3, 1: 5, 2: 0, 3: 1}
    # a controller created 4 of 4..7, bumped nothing, died
    states = {**{p: st(e) for p, e in before.items()}, 4: st(0, after_creation=before)}
    a = topic(8)
    assert plan.partitions_to_create(a, states) == [5, 6, 7]
    assert plan.expansion_epochs(a, states) == before  # not {0..4: now}
    # it created everything and bumped 0 only
    states = {0: st(4), 1: st(5), 2: st(0), 3: st(1), **{p: st(0, after_creation=before) for p in range(4, 8)}}
    assert plan.partitions_to_bump(states) == [1, 2, 3]
    # a shrink written before the expansion finished: the rest is created, then marked
    shrunk = topic(8, undeleted=6)
    half = {**{p: st(e) for p, e in before.items()}, 4: st(0, after_creation=before)}
    assert plan.partitions_to_create(shrunk, half) == [5, 6, 7]
    # a finished expansion leaves nothing to do, and the next one starts from the new epochs
    done = {0: st(4), 1: st(6), 2: st(1), 3: st(2), **{p: st(0, after_creation=before) for p in range(4, 8)}}
    assert plan.partitions_to_bump(done) == []
    assert plan.expansion_epochs(topic(10), done) == {0: 4, 1: 6, 2: 1, 3: 2, 4: 0, 5: 0, 6: 0, 7: 0}


def test_deletion_marks_the_tail_and_bumps_the_rest():
    a = topic(8, undeleted=6)
    states = {p: st(p) for p in range(8)}
    assert plan.partitions_to_mark(a, states) == [6, 7]
    assert plan.deletion_epochs(a, states) == {p: p for p in range(6)}
    marked = {**states, **{p: st(p, mode=PartitionMode.READ_ONLY, before_deletion={q: q for q in range(6)})
                           for p in (6, 7)}}
    assert plan.partitions_to_mark(a, marked) == []
    assert plan.partitions_to_bump(marked) == list(range(6))
    assert plan.marked(a, marked) == [6, 7]
    # a successor after marking 6 only: marks 7 with the same (unbumped) epochs
    half = {**states, 6: marked[6]}
    assert plan.partitions_to_mark(a, half) == [7] and plan.deletion_epochs(a, half) == {p: p for p in range(6)}


def test_the_guardrail_drops_an_internal_topics_new_partitions():
    states = {p: st(0) for p in range(5)}
    grown = topic(8, initial=5)
    refused = plan.refused_internal_expansion("__consumer_offsets", grown, states, allow_internal_increase=False)
    assert sorted(refused.partitions) == list(range(5)) and refused.undeleted_partition_count == 5
    assert plan.refused_internal_expansion("__consumer_offsets", grown, states, allow_internal_increase=True) is None
    assert plan.refused_internal_expansion("orders", grown, states, allow_internal_increase=False) is None
    assert plan.refused_internal_expansion("__transaction_state", topic(5), {}, False) is None  # creation
