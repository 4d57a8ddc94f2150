"""The synthetic generator: seeded, well-formed, and each plant found exactly by the local engine.

(tests/checkers/test_spark_checks.py runs the same histories on Spark and compares.)"""
from __future__ import annotations

import pytest

from chaoskit.checkers.catalog import KAFKA_CHECKS
from chaoskit.run.checks import run_checks
from chaoskit.history import synthetic
from chaoskit.history.schema import check_op


def found(ops) -> dict[str, int]:
    verdict = run_checks(ops, engine="local")
    assert verdict.valid != "unknown", verdict.to_json()
    assert len(verdict.results) == 13
    # a synthetic history exercises every Kafka check; truncation-undetected only where one is planted
    # (a clean history cannot hold a truncation: the replaced offset is an inconsistent offset)
    planted = verdict.results["inconsistent-offsets"].valid is False
    assert verdict.not_exercised == ([] if planted else ["truncation-undetected"]), verdict.to_json()
    assert verdict.results["key-order"].counts["cross_partition_pairs"] > 0, "keys move, with their key callbacks"
    return {n: r.counts["anomalies"] for n, r in verdict.results.items() if r.valid is False}


def test_same_seed_same_history_and_ops_are_well_formed():
    a = synthetic.generate(seed=5, events=2000, plant=["key-order"])
    b = synthetic.generate(seed=5, events=2000, plant=["key-order"])
    c = synthetic.generate(seed=6, events=2000, plant=["key-order"])
    assert a.ops == b.ops and a.ops != c.ops
    assert [op["index"] for op in a.ops] == list(range(len(a.ops)))
    for op in a.ops:
        check_op(op)
    assert list(synthetic.ops(seed=5, events=2000, plant=["key-order"])) == a.ops


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clean_histories_break_no_check(seed):
    assert found(synthetic.generate(seed=seed, events=6000).ops) == {}


@pytest.mark.parametrize("kind", synthetic.KINDS)
def test_each_plant_is_found_exactly(kind):
    s = synthetic.generate(seed=11, events=4000, plant=[kind])
    assert found(s.ops) == s.expected == synthetic.FINDS[kind]


def test_every_plant_at_once():
    s = synthetic.generate(seed=12, events=8000, plant=list(synthetic.KINDS))
    assert found(s.ops) == s.expected
    assert set(s.expected) == {c.name for c in KAFKA_CHECKS if not c.by_name}  # those that run unnamed


def test_bad_arguments_are_explained():
    with pytest.raises(ValueError, match="the kinds are"):
        synthetic.generate(plant=["nope"])
    with pytest.raises(ValueError, match="at least 1 producer, 2 consumers"):
        synthetic.generate(consumers=1)
