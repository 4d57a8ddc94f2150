"""Linearizable: the linearizability check as a Checker (its search lives in checkers/linear/).

The search is imported when the check runs, so a missing or broken checker makes the verdict
"unknown" with why, never a crash and never a pass. `model` kafka (the default) reads a Kafka
history's sends and polls as a log per partition; cas-register, kv and list-append read Jepsen-style
ops.
"""
from __future__ import annotations

from typing import Any

from chaoskit.checkers.catalog import LINEARIZABLE, MODELS
from chaoskit.checkers.result import CheckResult
from chaoskit.history.reader import History


class Linearizable:
    name = LINEARIZABLE.name

    def __init__(self, model: str | None = None, engine: str = "spark", spark_master: str | None = None,
                 budget_s: float = 60.0, **_settings: Any) -> None:
        if model is not None and model not in MODELS:
            raise ValueError(f"model {model!r}: use one of {', '.join(MODELS)}")
        self.model = model or "kafka"
        self.engine, self.spark_master, self.budget_s = engine, spark_master, budget_s

    def check(self, test: Any, history: History) -> CheckResult:
        try:
            from chaoskit.checkers.linear import check
        except ImportError as e:
            return CheckResult.unknown(self.name, f"the linearizability checker is not available ({e})")
        session = None
        from chaoskit.checkers.spark.session import is_connect, spark

        # the search runs on executors through the RDD API, which Spark Connect lacks: there, in this process
        if self.engine == "spark" and not is_connect(self.spark_master):
            session = spark(self.spark_master)
        return check(history.ops, self.model, spark=session, budget_s=self.budget_s)
