"""Linearizability checking: Wing-Gong search with Lowe's memoization over per-key or
per-partition sub-histories (P-compositionality), in-process or in parallel on Spark.

`check(ops, model)` is the entry point (check name "linearizable"; checkers/linearizable.py makes
it a Checker); `synthetic` generates seeded histories with planted violations. Jepsen's op naming
is mapped onto the models by chaoskit.history.jepsen.from_jepsen_ops. docs/linearizability.md
describes the models and value shapes.
"""
from chaoskit.checkers.linear.check import CHECK_NAME, check
from chaoskit.checkers.linear.models import MODELS

__all__ = ["CHECK_NAME", "MODELS", "check"]
