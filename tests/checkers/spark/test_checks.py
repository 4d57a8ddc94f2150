"""The Spark engine finds what the local engine finds, field for field, on clean and planted histories.

Batched: one SparkSession, two histories (a clean one and one with every kind planted), since each
Spark pass costs seconds on a loaded machine; tests/history/test_synthetic.py covers each plant
alone on the local engine.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.run.checks import run_checks
from chaoskit.checkers.spark.session import copy_log_since, log_mark
from chaoskit.history.reader import History
from chaoskit.history import synthetic


@pytest.mark.parametrize("plant", [(), synthetic.KINDS], ids=["clean", "every-plant"])
def test_spark_and_local_agree_and_find_exactly_the_plants(spark, plant, tmp_path: Path):
    s = synthetic.generate(seed=21, events=6000, plant=plant)
    path = History(s.ops).to_parquet(tmp_path / "h.parquet")
    mark = log_mark()
    on_spark = run_checks(History.from_path(path), engine="spark")
    spark_said = copy_log_since(mark, tmp_path / "spark.log")
    # one pass over the data: no operator pulls every row into one partition
    assert spark_said is None or "No Partition Defined" not in spark_said.read_text()
    local = run_checks(s.ops, engine="local")
    assert on_spark.to_json() == local.to_json()
    assert 0 < on_spark.results["lost-write"].counts["acked_after_fault"] < on_spark.results["lost-write"].counts["acked"]
    assert {n: r.counts["anomalies"] for n, r in on_spark.results.items() if r.valid is False} == s.expected
    assert all(r.valid is not True or not r.witnesses for r in on_spark.results.values())


def test_a_spark_check_that_raises_is_unknown_and_the_others_still_run(spark, monkeypatch):
    from chaoskit.checkers.spark import checks as spark_checks

    def broken(tables):
        raise RuntimeError("boom")
    monkeypatch.setattr(spark_checks, "duplicate", broken)
    verdict = run_checks(synthetic.generate(seed=2, events=500).ops, ["duplicate", "unseen"], engine="spark")
    assert verdict.results["duplicate"].valid == "unknown"
    assert "RuntimeError: boom" in verdict.results["duplicate"].error
    assert verdict.results["unseen"].valid is True
    assert verdict.valid == "unknown"


@pytest.mark.parametrize("fails", ["once", "always"])
def test_a_check_whose_job_fails_beside_others_is_run_again_alone(spark, monkeypatch, caplog, fails):
    # checks' jobs run two at a time: a failure there is retried alone, and only a failure alone counts
    from chaoskit.checkers.spark import checks as spark_checks

    collect, calls = spark_checks._collect, []

    def flaky(plan):
        if plan.order == ["value"]:  # duplicate's plan
            calls.append(plan)
            if fails == "always" or len(calls) == 1:
                raise RuntimeError("lost a cached block")
        return collect(plan)
    monkeypatch.setattr(spark_checks, "_collect", flaky)
    ops = synthetic.generate(seed=3, events=500, plant=("duplicate",)).ops
    verdict = run_checks(ops, ["duplicate", "unseen", "lost-write"], engine="spark")
    assert "running it again alone" in caplog.text
    assert verdict.results["unseen"].valid is True
    if fails == "once":
        assert verdict.to_json() == run_checks(ops, ["duplicate", "unseen", "lost-write"], engine="local").to_json()
        assert verdict.results["duplicate"].valid is False
    else:
        assert verdict.results["duplicate"].valid == "unknown"
        assert "lost a cached block" in verdict.results["duplicate"].error


def _relabel(x, n):
    """Case n's copy of a KEY_MOVES value: its own topics and key, so the cases share one history."""
    if isinstance(x, list):
        return [_relabel(v, n) for v in x]
    return f"{x}{n}" if x in ("t", "u", "k") else x


def test_spark_and_local_agree_on_key_moves_between_partitions(spark):
    from ..local.test_checks import KEY_MOVES

    ops, keys, cross = [], set(), 0
    for n, (case_ops, anomalies, pairs) in enumerate(KEY_MOVES.values()):
        ops += [{**op, **{c: _relabel(op[c], n) for c in ("topic", "key", "value") if c in op},
                 "index": 100 * n + op["index"]} for op in case_ops]
        keys |= {f"k{n}"} if anomalies else set()
        cross += pairs
    on_spark = run_checks(ops, ["key-order"], engine="spark")
    assert on_spark.to_json() == run_checks(ops, ["key-order"], engine="local").to_json()
    r = on_spark.results["key-order"]
    assert (r.counts["anomalies"], r.counts["cross_partition_pairs"]) == (len(keys), cross)
    assert {w["key"] for w in r.witnesses} == keys


def test_spark_and_local_agree_on_truncations_judged_by_behaviour(spark):
    from ..local.test_checks import poll, send, truncated_then

    cases = {"re-read": truncated_then(poll(0, 10, (0, 1, "b", 1, 1), (0, 2, "b", 1, 2), (0, 3, "b", 1, 3))),
             "went on": truncated_then(poll(0, 10, (0, 3, "b", 1, 3))),
             "from past": truncated_then(poll(0, 10, (0, 2, "b", 1, 2), (0, 3, "b", 1, 3))),
             "none": truncated_then()[:8],
             "never read again": truncated_then(),
             "retried": truncated_then(send(0, 0, "a", 1, 0, 4), poll(0, 10, (0, 4, "a", 0, 1), (0, 5, "a", 0, 1)))}
    names = ["truncation-undetected", "nonmonotonic-poll", "duplicate"]
    for case, ops in cases.items():
        assert run_checks(ops, names, engine="spark").to_json() == run_checks(ops, names, engine="local").to_json(), case
    went_on = run_checks(cases["went on"], names, engine="spark").results["truncation-undetected"]
    assert went_on.counts == {"anomalies": 2, "replaced_reads": 2}


def test_spark_and_local_agree_on_moved_values_left_by_compaction(spark):
    from ..local.test_checks import MOVED_CASES, moved_then_restored

    ops = []
    for n, (restored, op_s, _anomalies, _judged) in enumerate(MOVED_CASES.values()):
        for op in moved_then_restored(restored, f"t{n}", op_s):  # each case its own topic and keys
            v = op.get("value")
            ops.append({**op, "index": 100 * n + op["index"], "time_ns": op["time_ns"] + n * 10**12,
                        "key": f"{op['key']}{n}", "value": [v[0], f"{v[1]}{n}", v[2]] if v else v})
    names = ["moved-value-kept"]
    on_spark = run_checks(ops, names, engine="spark")
    assert on_spark.to_json() == run_checks(ops, names, engine="local").to_json()
    r = on_spark.results["moved-value-kept"]
    assert (r.counts["anomalies"], r.counts["moved_keys"]) == \
        (sum(c[2] for c in MOVED_CASES.values()), sum(c[3] for c in MOVED_CASES.values()))


def test_spark_and_local_agree_on_the_consumer_group_checks(spark):
    """commit-regressed and double-owner, every case of each on a topic of its own, in one pass."""
    from ..local.test_checks import COMMIT_CASES, OWNER_CASES

    checks = {"commit-regressed": (COMMIT_CASES, "commit_pairs"), "double-owner": (OWNER_CASES, "handovers")}
    cases = [case for table, _evidence in checks.values() for case in table.values()]
    ops = [{**op, "index": 1000 * n + op["index"], **({"topic": f"t{n}"} if "topic" in op else {}),
            **({"value": [[f"t{n}", tp[1]] for tp in op["value"]]} if op["f"].startswith("on_partitions") else {})}
           for n, (case_ops, _anomalies, _judged) in enumerate(cases) for op in case_ops]
    on_spark = run_checks(ops, list(checks), engine="spark")
    assert on_spark.to_json() == run_checks(ops, list(checks), engine="local").to_json()
    for name, (table, evidence) in checks.items():
        assert on_spark.results[name].counts == {"anomalies": sum(c[1] for c in table.values()),
                                                 evidence: sum(c[2] for c in table.values())}, name


def test_spark_and_local_agree_when_two_producers_send_one_value(spark):
    # sends are told apart by (process, value): p0's acknowledged "same" is lost (offset 1 was read,
    # offset 0 never), p1's failed "same" is neither acknowledged nor lost
    def op(i, proc, kind, value, **at):
        return {"index": i, "process": proc, "type": kind, "f": "send", "topic": "t", "key": "k", "value": value, **at}
    ops = [op(0, 0, "invoke", "same"), op(1, 0, "ok", "same", partition=0, offset=0),
           op(2, 1, "invoke", "same"), op(3, 1, "fail", "same"),
           op(4, 1, "invoke", "other"), op(5, 1, "ok", "other", partition=0, offset=1),
           {"index": 6, "process": 10, "type": "invoke", "f": "poll", "topic": "t"},
           {"index": 7, "process": 10, "type": "ok", "f": "poll", "topic": "t", "value": [[0, 1, "k", "other", 0]]}]
    names = ["lost-write", "unseen", "duplicate", "key-order", "nonmonotonic-send"]
    on_spark = run_checks(ops, names, engine="spark")
    assert on_spark.to_json() == run_checks(ops, names, engine="local").to_json()
    lost = on_spark.results["lost-write"]
    assert (lost.counts["anomalies"], lost.counts["acked"]) == (1, 2)
    assert [(w["process"], w["value"]) for w in lost.witnesses] == [(0, '"same"')]  # values as JSON text


def test_spark_gives_the_same_first_witnesses_as_local_when_anomalies_outnumber_them(spark):
    # 24 lost writes (only offset 24 of p0 was read) and 14 sends acknowledged below the one before
    # (p1 counts down): each check's count is all of them, its witnesses the first ones by index
    from chaoskit.checkers.result import MAX_WITNESSES

    ops: list[dict] = []

    def send(proc, value, partition, offset):
        i = len(ops)
        ops.extend([{"index": i, "process": proc, "type": "invoke", "f": "send", "topic": "t", "key": f"k{proc}",
                     "value": value},
                    {"index": i + 1, "process": proc, "type": "ok", "f": "send", "topic": "t", "key": f"k{proc}",
                     "value": value, "partition": partition, "offset": offset}])
    for n in range(25):
        send(0, f"a{n}", 0, n)
        if n < 15:
            send(1, f"b{n}", 1, 100 - n)
    ops += [{"index": len(ops), "process": 10, "type": "invoke", "f": "poll", "topic": "t"},
            {"index": len(ops) + 1, "process": 10, "type": "ok", "f": "poll", "topic": "t",
             "value": [[0, 24, "k0", "a24", 0]]}]
    names = ["lost-write", "nonmonotonic-send"]
    on_spark = run_checks(ops, names, engine="spark")
    assert on_spark.to_json() == run_checks(ops, names, engine="local").to_json()
    lost, back = on_spark.results["lost-write"], on_spark.results["nonmonotonic-send"]
    assert (lost.counts["anomalies"], back.counts["anomalies"]) == (24, 14)
    assert [w["value"] for w in lost.witnesses] == [f'"a{n}"' for n in range(MAX_WITNESSES)]
    assert [w["to_offset"] for w in back.witnesses] == [100 - n for n in range(1, MAX_WITNESSES + 1)]
