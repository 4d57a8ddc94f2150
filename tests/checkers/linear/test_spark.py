"""The same histories searched in-process and on Spark local[2] give the same verdicts and
witnesses (a few histories only: Spark is the slow part of this test set)."""
from __future__ import annotations


from chaoskit.checkers.linear import check
from chaoskit.checkers.linear.synthetic import generate


CASES = [
    ("list-append", dict(seed=11, clients=10, ops=2000, keys=8, info_rate=0.02)),
    ("list-append", dict(seed=12, clients=5, ops=300, keys=3, plant="lost-write")),
    ("kv", dict(seed=15, clients=8, ops=1500, keys=6, info_rate=0.05)),
    ("kv", dict(seed=16, clients=5, ops=300, keys=3, info_rate=0.05, plant="stale-read")),
    ("cas-register", dict(seed=13, clients=6, ops=400, keys=4, plant="stale-read")),
    ("cas-register", dict(seed=14, clients=6, ops=400, keys=4, info_rate=0.1, plant="real-time")),
]


def test_spark_and_in_process_agree(spark):
    for kind, params in CASES:
        ops = generate(kind, **params).ops
        local, distributed = check(ops, kind), check(ops, kind, spark=spark)
        assert distributed.valid == local.valid == (params.get("plant") is None), (kind, params)
        assert distributed.counts == local.counts
        assert [w["op"] for w in distributed.witnesses] == [w["op"] for w in local.witnesses]


def test_budget_applies_on_spark_workers_too(spark):
    ops = generate("list-append", seed=1, clients=5, ops=1500, keys=1).ops
    result = check(ops, "list-append", spark=spark, budget_s=1e-9)
    assert result.valid == "unknown" and "budget" in result.error


def test_kv_strings_travel_to_the_workers_and_back(spark, history):
    # concurrent appends on two keys; on "b" a get sees an order the earlier get already ruled out
    rows = []
    for key, last in (("a", "yx"), ("b", "xy")):
        rows += [(0, "invoke", "append", "x", key), (1, "invoke", "append", "y", key), (0, "ok", "append", "x", key),
                 (1, "ok", "append", "y", key), (2, "invoke", "get", None, key), (2, "ok", "get", "yx", key),
                 (2, "invoke", "get", None, key), (2, "ok", "get", last, key)]
    ops = history(*rows)
    local, distributed = check(ops, "kv"), check(ops, "kv", spark=spark)
    assert local.valid is distributed.valid is False and local.counts == distributed.counts
    assert local.witnesses == distributed.witnesses and [w["key"] for w in local.witnesses] == ["b"]
    assert local.witnesses[0]["state"] == "yx"
