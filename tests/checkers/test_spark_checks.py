"""The Spark engine finds what the local engine finds, field for field, on clean and planted histories.

Batched: one SparkSession, two histories (a clean one and one with every kind planted), since each
Spark pass costs seconds on a loaded machine; tests/history/test_synthetic.py covers each plant
alone on the local engine.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.checkers.run import run_checks
from chaoskit.checkers.source import History
from chaoskit.history import synthetic


@pytest.mark.parametrize("plant", [(), synthetic.KINDS], ids=["clean", "every-plant"])
def test_spark_and_local_agree_and_find_exactly_the_plants(spark, plant, tmp_path: Path):
    s = synthetic.generate(seed=21, events=6000, plant=plant)
    path = History(s.ops).to_parquet(tmp_path / "h.parquet")
    on_spark = run_checks(History.from_path(path), engine="spark")
    local = run_checks(s.ops, engine="local")
    assert on_spark.to_json() == local.to_json()
    assert {n: r.counts["anomalies"] for n, r in on_spark.results.items() if r.valid is False} == s.expected
    assert all(r.valid is not True or not r.witnesses for r in on_spark.results.values())


def test_a_spark_check_that_raises_is_unknown_and_the_others_still_run(spark, monkeypatch):
    from chaoskit.checkers import spark_checks

    def broken(tables):
        raise RuntimeError("boom")
    monkeypatch.setattr(spark_checks, "duplicate", broken)
    verdict = run_checks(synthetic.generate(seed=2, events=500).ops, ["duplicate", "unseen"], engine="spark")
    assert verdict.results["duplicate"].valid == "unknown"
    assert "RuntimeError: boom" in verdict.results["duplicate"].error
    assert verdict.results["unseen"].valid is True
    assert verdict.valid == "unknown"
