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
# the active controller killed (restarted at the window's end), paused (shorter than its ZooKeeper
# session: it stalls, then goes on) or cut off (longer: its session expires and the other takes over)
CONTROLLER_FAULTS = {"kill": {"weight": 1, "targets": ["active-controller"], "window_s": [1.0, 2.0]},
                     "pause": {"weight": 1, "targets": ["active-controller"], "window_s": [1.0, 3.0]},
                     "partition": {"weight": 1, "targets": ["active-controller"], "window_s": [5.0, 7.0]}}


def combine(*mixes: dict[str, Any]) -> dict[str, Any]:
    """Random fault mixes as one: a fault in several keeps its first window and params, adds the weights
    and draws from every target (so broker kills and controller kills share the one `kill`)."""
    out: dict[str, Any] = {}
    for m in mixes:
        for name, entry in m.items():
            if name not in out:
                out[name] = {**entry, "targets": list(entry["targets"])}
                continue
            out[name]["weight"] += entry["weight"]
            out[name]["targets"] += [t for t in entry["targets"] if t not in out[name]["targets"]]
    return out


def controller_failover(at: float, how: str = "kill", window_s: float | None = None) -> dict[str, Any]:
    """A scripted fault on the active controller at fraction `at` of the run, placed on an admin step
    so the change's steps (expansion, deletion marking, removal) are interrupted and finished by
    whichever controller is active next, while the workload and the checks run: `kill` (kill -9,
    restarted after 1.5 s), `partition` (every link cut for 6 s, past its 4 s ZooKeeper session: the
    other controller takes over) or `pause` (SIGSTOP for 2 s, within the session: it stalls)."""
    length = window_s or {"kill": 1.5, "partition": 6.0, "pause": 2.0}[how]
    return {"at": at, "fault": how, "target": "active-controller", "window_s": length}

# a consumer group that reads a little slower than the producers write: reordering across
# partitions shows in the group's lag (a key's older records still queued in one partition while
# newer ones arrive in another), so a run without lag would prove little
SLOW_GROUP = {"producers": 3, "consumers": 2, "keys": 60, "rate": 40, "poll_rate": 2}
SMALL_POLLS = {"max_poll_records": 10}


def lagging_group_run(chaos: Any, checks: list[str], faults: dict[str, Any], **workload: Any) -> Any:
    """A keyed-sequences run on TOPIC (two partitions) with SLOW_GROUP (and `workload`'s options)
    reading in SMALL_POLLS behind the producers: what the generic suites' stories play over."""
    from chaoskit.run.chaostest import Topic

    return chaos.run(topics=[Topic(TOPIC, 2)], checks=checks, workload_options={**SLOW_GROUP, **workload},
                     client_options=dict(SMALL_POLLS), faults=faults, drain_timeout_s=20)
