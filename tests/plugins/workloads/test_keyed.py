"""The keyed-sequences workload: pure and seeded per process, paced, unique values per key."""
from __future__ import annotations

import pytest

from chaoskit.roles import PENDING
from chaoskit_plugins.workloads.keyed import KeyedSequences


def sends(w: KeyedSequences, process: int, n: int) -> list:
    out, t = [], 0.0
    while len(out) < n:
        op = w.op(process, t)
        if op is PENDING:
            t += 0.01
            continue
        out.append(op)
    return out


def test_a_producer_depends_only_on_the_seed_and_its_own_history():
    a, b = KeyedSequences(seed=7, keys=5), KeyedSequences(seed=7, keys=5)
    sends(b, 1, 30)  # another process's activity changes nothing for process 0
    assert sends(a, 0, 40) == sends(b, 0, 40)
    assert sends(KeyedSequences(seed=8, keys=5), 0, 40) != sends(KeyedSequences(seed=7, keys=5), 0, 40)


def test_values_number_each_producers_sends_per_key():
    ops = sends(KeyedSequences(seed=1, keys=3), 2, 60)
    seen: dict[str, int] = {}
    for op in ops:
        producer, key, seq = op["value"]
        assert (producer, key, op["key"], op["f"], op["topic"]) == (2, op["key"], key, "send", "orders")
        assert seq == seen.get(key, 0)
        seen[key] = seq + 1


def test_pacing_roles_and_the_end():
    w = KeyedSequences(producers=2, consumers=1, rate=10, duration_s=5)
    assert w.processes == {"producer": [0, 1], "consumer": [2]}
    assert w.op(0, 0.0) is PENDING  # 0 sends are due at t=0
    assert w.op(0, 0.1)["f"] == "send" and w.op(0, 0.1) is PENDING
    assert w.op(2, 1.0) == {"f": "poll", "topic": "orders"} == w.drain_op(2)
    assert w.op(0, 5.0) is None and w.op(2, 5.0) is None and w.drain_op(0) is None
    with pytest.raises(ValueError, match="processes 0..2"):
        w.op(3, 0.0)
    with pytest.raises(ValueError, match="keys"):
        KeyedSequences(keys=0)


def test_a_late_paced_group_waits_then_polls_at_its_pace():
    from chaoskit.roles import PENDING
    from chaoskit_plugins.workloads.keyed import KeyedSequences

    w = KeyedSequences(producers=1, consumers=1, poll_rate=2, consumer_start_s=5, duration_s=10)
    assert w.op(1, 4.9) is PENDING  # not joined yet
    polls = [w.op(1, 6.0) for _ in range(5)]
    assert sum(p is not PENDING for p in polls) == 2  # one second in at 2 a second
    assert w.op(0, 0.5)["f"] == "send"  # producers do not wait


def test_several_topics_give_each_topic_its_own_producers_and_consumers():
    w = KeyedSequences(producers=4, consumers=2, topics=["a", "b"])
    assert [sends(w, p, 3)[0]["topic"] for p in range(4)] == ["a", "b", "a", "b"]
    assert [w.op(c, 10.0)["topic"] for c in (4, 5)] == ["a", "b"]
    assert [w.drain_op(c)["topic"] for c in (4, 5)] == ["a", "b"]
    assert KeyedSequences(producers=1, consumers=1).topic_of(1) == "orders"  # one topic: `topic`
    with pytest.raises(ValueError, match="at least as many producers and consumers"):
        KeyedSequences(producers=1, consumers=2, topics=["a", "b"])
    with pytest.raises(ValueError, match="non-empty list of topic names"):
        KeyedSequences(topics=[])
