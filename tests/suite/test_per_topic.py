"""Per-topic judgement: a history cut to one topic's processes (with the nemesis's and the admin's
ops of that topic), checked alone; key-order left out for a topic without ordered delivery; which
partitioning rule explains each acknowledged send."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chaoskit.checkers.verdict import Verdict
from chaoskit.client.linear_hash import linear_partition, modulo_partition
from chaoskit.history.reader import History
from chaoskit.history.recorder import Recorder
from chaoskit.run.chaostest import ChaosTest, RunResult
from chaoskit.suite.per_topic import processes_of, routing, topic_history, topic_result


def op(process: Any, f: str, type_: str, index: int, **fields: Any) -> dict[str, Any]:
    return {"process": process, "f": f, "type": type_, "index": index, "time_ns": index, **fields}


def send(process: int, topic: str, key: str, seq: int, partition: int, offset: int, index: int) -> list[dict[str, Any]]:
    value = [process, key, seq]
    return [op(process, "send", "invoke", index, topic=topic, key=key, value=value),
            op(process, "send", "ok", index + 1, topic=topic, key=key, value=value, partition=partition, offset=offset)]


def poll(process: int, topic: str, records: list[tuple[int, int, list[Any]]], index: int) -> list[dict[str, Any]]:
    value = [[p, o, v[1], v, 0] for p, o, v in records]  # (partition, offset, key, value, leader epoch)
    return [op(process, "poll", "invoke", index, topic=topic),
            op(process, "poll", "ok", index + 1, topic=topic, value=value)]


def reordered_pair() -> list[dict[str, Any]]:
    """Topic "u": producer 1 sends k1 twice, to partitions 0 then 1; consumer 3 reads the second
    first (a key-order anomaly). Topic "o": producer 0 and consumer 2, in order."""
    return [*send(0, "o", "k0", 0, 0, 0, 0), *send(1, "u", "k1", 0, 0, 0, 2), *send(1, "u", "k1", 1, 1, 0, 4),
            op("admin", "expand", "ok", 6, topic="u", value={"count": 2}),
            op("nemesis", "start", "info", 7, value={"fault": "partition"}),
            *poll(2, "o", [(0, 0, [0, "k0", 0])], 8), *poll(3, "u", [(1, 0, [1, "k1", 1])], 10),
            *poll(3, "u", [(0, 0, [1, "k1", 0])], 12)]


def test_the_cut_keeps_a_topics_processes_and_the_ops_naming_no_other_topic():
    history = History(reordered_pair())
    assert processes_of(history, "u") == {1, 3}
    cut = topic_history(history, "o")
    assert {o["process"] for o in cut.ops} == {0, 2, "nemesis"}  # the admin's op names "u"
    assert {o["process"] for o in topic_history(history, "u").ops} == {1, 3, "admin", "nemesis"}


def test_a_process_on_two_topics_cannot_be_cut():
    history = History([*send(0, "a", "k", 0, 0, 0, 0), *send(0, "b", "k", 0, 0, 0, 2)])
    with pytest.raises(ValueError, match=r"processes \[0\] worked on 'a' and other topics"):
        processes_of(history, "a")


@pytest.fixture
def run(tmp_path: Path) -> RunResult:
    with Recorder(tmp_path / "history.jsonl") as recorder:
        for o in reordered_pair():
            recorder.record({k: v for k, v in o.items() if k not in ("index", "time_ns")})
    return RunResult(ChaosTest("pair"), "r1", tmp_path, Verdict({}), None, {})


def test_key_order_judges_an_ordered_topic_and_not_an_unordered_one(run: RunResult):
    assert topic_result(run, "u").anomalies == {"key-order"}
    unordered = topic_result(run, "u", ordered_delivery=False)
    assert "key-order" not in unordered.verdict.results and unordered.valid is True
    assert topic_result(run, "o").valid is True and topic_result(run, "o").stats["topic"] == "o"


def test_routing_says_which_rule_explains_each_send():
    keys = [f"k{i}" for i in range(30)]
    # a key whose modulo-6 partition is neither its modulo-4 nor its modulo-8 one
    six = next(k for k in keys if modulo_partition(k.encode(), 6) not in
               {modulo_partition(k.encode(), 4), modulo_partition(k.encode(), 8)})
    ops = [*send(0, "t", six, 0, modulo_partition(six.encode(), 6), 0, 0),
           *send(0, "t", six, 1, linear_partition(six.encode(), 4, 6), 1, 2),
           *send(0, "t", six, 2, 9, 2, 4),  # beyond every count: no rule
           *send(0, "other", six, 0, 0, 0, 6)]
    got = routing(History(ops), "t", (4, 6, 8), initial=4)
    assert got == {"sends": 3, "linear": 1, "stock": 2, "linear_only": 0, "stock_only": 1, "neither": 1}
