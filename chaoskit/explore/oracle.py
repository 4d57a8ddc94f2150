"""What of a run's verdict is a finding: the anomalies a schedule's own steps do not excuse.

Some steps cost data by design, and a search that reported them would bury its real findings:
- an unclean election (the controller elected an out-of-sync replica of a run's topic) loses the
  writes only the old leader had: then only the checks KIP-320 keeps promising are judged
  (truncation detection, duplicates), with those that do not judge data (coordinators, writes to
  a ReadOnly partition), as the truncation suite does. The excuse holds for a check only where its
  stored witnesses all lie on partitions elected uncleanly (or name no partition): a loss on another
  partition is no loss of those elections. A duplicate whose every place lies on a
  partition elected uncleanly is excused too: the old leader's records past the divergence are gone,
  but the history shows it only where something was observed at the same offset again, so a
  producer's retry of a record the election lost can look like a second copy;
- a shrink that removes partitions at once (KIP-694's immediate_delete), or after a delay that ends
  within the run (the `stale-shrink` story's too), loses what nobody read of them by then:
  `lost-write` and `unseen` are excused.
A shrink without a delay removes a partition only once the group drained it, and a delay past the
run's end removes nothing while it runs: neither excuses anything.

And a client is held only to what it claims (chaoskit.run.guarantees): a check that judges a
client-side guarantee (KIP-253's key order, its compaction tombstones, KIP-320's truncation
detection, KIP-694's mode awareness) finds nothing against a client that does not claim it, as the
suites report "not claimed" instead of failing. Nor do the unclean elections the
`zombie-isr` story stages (its leader to its follower): with min.insync.replicas=2 they lose nothing
in a system that keeps KIP-320's rule, so what they lose is a finding.
"""
from __future__ import annotations

from typing import Any, Mapping

from chaoskit.explore.coverage import RunCoverage
from chaoskit.explore.steps import StepSchedule

JUDGED_AFTER_UNCLEAN = frozenset({"truncation-undetected", "duplicate", "coordinator-split", "write-to-readonly",
                                  "linearizable"})
LOST_BY_REMOVAL = frozenset({"lost-write", "unseen"})
UNCLEAN = "an unclean election of the run's topic loses what only the old leader had"
UNCLEAN_PLACES = "every place of the value is on a partition elected uncleanly: its old records past the divergence are gone"
NOT_CLAIMED = "the client does not claim {}"
# the checks that judge a client-side guarantee (chaoskit.run.guarantees)
GUARANTEE_OF = {"key-order": "kip253-key-order", "moved-value-kept": "kip253-compaction",
                "truncation-undetected": "kip320-truncation-detection", "write-to-readonly": "kip694-mode-awareness"}
REMOVED = "a shrink removed partitions before the group read them (immediate, or a delay that ended in the run)"


def removes_unread(schedule: StepSchedule, run_end_s: float) -> bool:
    """Does a shrink of the schedule remove partitions whatever the group read of them?"""
    for s in schedule.steps:
        p = s.params
        if (s.fault == "admin" and p.get("op") == "shrink") or s.fault == "stale-shrink":
            if p.get("immediate") or ("delay_ms" in p and s.at_s + p["delay_ms"] / 1000 < run_end_s):
                return True
    return False


def excused(verdict: Mapping[str, Any], schedule: StepSchedule, coverage: RunCoverage, topics: set[str],
            run_end_s: float, claims: frozenset[str] | None = None) -> dict[str, str]:
    """{check: why} for the anomalies of `verdict` (results.json's) this schedule's steps excuse, and
    those of a guarantee the client does not claim (`claims`; None: it claims every one)."""
    results = verdict.get("results") or {}
    anomalies = {name for name, r in results.items() if r.get("valid") is False}
    out: dict[str, str] = {}
    if claims is not None:
        out.update({c: NOT_CLAIMED.format(GUARANTEE_OF[c]) for c in anomalies
                    if c in GUARANTEE_OF and GUARANTEE_OF[c] not in claims})
    if removes_unread(schedule, run_end_s):
        out.update({c: REMOVED for c in anomalies & LOST_BY_REMOVAL})
    guarded = {(e.value["topic"], e.value.get("partition"), e.value["elected"]["from"], e.value["elected"]["to"])
               for e in coverage.events if e.label.startswith("fault:zombie-isr") and isinstance(e.value, dict)
               and e.value.get("elected")}
    unclean = {(e.topic, e.partition) for e in coverage.events if e.label == "election:unclean" and e.topic in topics
               and (e.topic, e.partition, *(e.value or (None, None))) not in guarded}
    if unclean:
        for c in anomalies - JUDGED_AFTER_UNCLEAN:
            where = places(results[c].get("witnesses") or [])
            if where is None or where <= unclean:  # a witness elsewhere is no loss of these elections
                out[c] = UNCLEAN
        where = places(results.get("duplicate", {}).get("witnesses") or [])
        if "duplicate" in anomalies and where and where <= unclean:
            out["duplicate"] = UNCLEAN_PLACES
    return out


def places(witnesses: list[Any]) -> set[tuple[str, int]] | None:
    """The partitions the stored witnesses name ((topic, partition) fields, or a duplicate's
    positions); None when one names none, so that an unclean election excuses its check whole."""
    out: set[tuple[str, int]] = set()
    for w in witnesses:
        if not isinstance(w, dict):
            return None
        named = [tuple(p[:2]) for p in w.get("positions") or []]
        if "topic" in w and isinstance(w.get("partition"), int):
            named.append((w["topic"], w["partition"]))
        if not named:
            return None
        out.update(named)
    return out
