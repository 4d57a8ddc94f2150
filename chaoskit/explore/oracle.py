"""What of a run's verdict is a finding: the anomalies a schedule's own steps do not excuse.

Some steps cost data by design, and a search that reported them would bury its real findings:
- an unclean election (the controller elected an out-of-sync replica of a run's topic) loses the
  writes only the old leader had: then only the checks KIP-320 keeps promising are judged
  (truncation detection, duplicates), with those that do not judge data (coordinators, writes to
  a ReadOnly partition), as the truncation suite does;
- a shrink that removes partitions at once (KIP-694's immediate_delete), or after a delay that ends
  within the run, loses what nobody read of them by then: `lost-write` and `unseen` are excused.
A shrink without a delay removes a partition only once the group drained it, and a delay past the
run's end removes nothing while it runs: neither excuses anything.
"""
from __future__ import annotations

from typing import Iterable

from chaoskit.explore.coverage import RunCoverage
from chaoskit.explore.steps import StepSchedule

JUDGED_AFTER_UNCLEAN = frozenset({"truncation-undetected", "duplicate", "coordinator-split", "write-to-readonly",
                                  "linearizable"})
LOST_BY_REMOVAL = frozenset({"lost-write", "unseen"})
UNCLEAN = "an unclean election of the run's topic loses what only the old leader had"
REMOVED = "a shrink removed partitions before the group read them (immediate, or a delay that ended in the run)"


def removes_unread(schedule: StepSchedule, run_end_s: float) -> bool:
    """Does a shrink of the schedule remove partitions whatever the group read of them?"""
    for s in schedule.steps:
        p = s.params
        if s.fault == "admin" and p.get("op") == "shrink":
            if p.get("immediate") or ("delay_ms" in p and s.at_s + p["delay_ms"] / 1000 < run_end_s):
                return True
    return False


def excused(anomalies: Iterable[str], schedule: StepSchedule, coverage: RunCoverage, topics: set[str],
            run_end_s: float) -> dict[str, str]:
    """{check: why} for the anomalies this schedule's steps excuse."""
    out: dict[str, str] = {}
    anomalies = set(anomalies)
    if removes_unread(schedule, run_end_s):
        out.update({c: REMOVED for c in anomalies & LOST_BY_REMOVAL})
    if any(e.label == "election:unclean" and e.topic in topics for e in coverage.events):
        out.update({c: UNCLEAN for c in anomalies - JUDGED_AFTER_UNCLEAN})
    return out
