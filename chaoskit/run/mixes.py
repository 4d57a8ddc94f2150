"""The fault mixes and workloads the suites (suites/) and `make demo` share.

A mix is a schedule spec without `duration_s` (the run's is used): random faults drawn from the
seed, plus `scripted` steps every seed gets (the expansion or deletion a guarantee is about).
"""
from __future__ import annotations

from typing import Any

TOPIC = "orders"


def admin_step(at: float, op: str, count: int, topic: str = TOPIC, **params: Any) -> dict[str, Any]:
    """An admin change (expand/shrink `topic` to `count`) opening at fraction `at` of the run."""
    return {"at": at, "fault": "admin", "target": "client", "window_s": 0.5,
            "params": {"op": op, "topic": topic, "to": count, **params}}


def mix(scripted: list[dict[str, Any]], faults: dict[str, Any], mean_interval_s: float = 4.0,
        quiet_end_s: float = 2.0) -> dict[str, Any]:
    return {"mean_interval_s": mean_interval_s, "window_s": [1.0, 3.0], "quiet_end_s": quiet_end_s,
            "faults": faults, "scripted": scripted}


LEADER_ISOLATION = {"partition": {"weight": 2, "targets": [f"leader-of:{TOPIC}/0", f"leader-of:{TOPIC}/1"]}}
BROKER_KILLS = {"kill": {"weight": 1, "targets": ["random-broker"], "window_s": [1.0, 2.0]}}
STALE_METADATA = {"stale-metadata": {"weight": 1, "targets": ["random-broker"]},
                  "freeze-client-metadata": {"weight": 1, "targets": ["client"]}}

# a consumer group that reads a little slower than the producers write: reordering across
# partitions shows in the group's lag (a key's older records still queued in one partition while
# newer ones arrive in another), so a run without lag would prove little
SLOW_GROUP = {"producers": 3, "consumers": 2, "keys": 60, "rate": 40, "poll_rate": 2}
SMALL_POLLS = {"max_poll_records": 10}
