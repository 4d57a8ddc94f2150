"""Built-in checks, registered with the plugin manager like a third party's: every Kafka check of
the catalog (chaoskit.checkers.catalog) and `linearizable`.

`CHECKS` maps each name to its factory; a factory is called with the check settings as keywords
(`engine`, `spark_master`, `model`, `budget_s`) and builds a Checker.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

from chaoskit.checkers.catalog import JEPSEN_CHECKS, KAFKA_CHECKS
from chaoskit.checkers.kafka import KafkaCheck
from chaoskit.checkers.linearizable import Linearizable

CHECKS: dict[str, Callable[..., Any]] = {c.name: partial(KafkaCheck, c) for c in (*KAFKA_CHECKS, *JEPSEN_CHECKS)}
CHECKS[Linearizable.name] = Linearizable
