"""Linearizability checking: Wing-Gong search with Lowe's memoization over per-key or
per-partition sub-histories (P-compositionality), in-process or in parallel on Spark.

`check(ops, model)` is the entry point (check name "linearizable"); `from_jepsen_ops` maps
Jepsen's op naming onto our models; `synthetic` generates seeded histories with planted
violations. docs/linearizability.md describes the models and value shapes.
"""
from chaoskit.checkers.linear.check import CHECK_NAME, check
from chaoskit.checkers.linear.jepsen import from_jepsen_ops
from chaoskit.checkers.linear.models import MODELS

__all__ = ["CHECK_NAME", "MODELS", "check", "from_jepsen_ops"]
