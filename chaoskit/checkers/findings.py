"""What a check's engines hand back, and how it becomes a CheckResult, the same for both engines.

An engine (Spark or local) computes, per check, the number of anomalies, a few extra counts and
its first witnesses as plain rows (dicts of ints, strings and sorted lists) in the check's sort
order. `result()` turns them into the CheckResult with one explanation sentence per witness, so
the Spark and local engines agree exactly when they find the same rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.checkers.result import MAX_WITNESSES, CheckResult

Row = dict[str, Any]

# key-order's reasons (the %d are the two deliveries' partitions), the same text from both engines
OUT_OF_ORDER = "the second was delivered first"
NOT_MOVED = "no key-revoked(p%d) then key-assigned(p%d) between the deliveries"

EXPLAIN: dict[str, str] = {
    "lost-write": "send {value} by process {process} was acknowledged at {topic}/{partition} offset {offset}, "
                  "offsets up to {max_read} there were read, but it never was",
    "unseen": "send {value} by process {process} was acknowledged at {topic}/{partition} offset {offset} "
              "and no poll ever delivered it",
    "duplicate": "value {value} is at {count} places: {positions}",
    "inconsistent-offsets": "{topic}/{partition} offset {offset} holds different values: {values}",
    "poll-skip": "process {process} read {topic}/{partition} offset {from_offset} then {to_offset} "
                 "(op {index}), skipping {missed} known offset(s) between them",
    "nonmonotonic-poll": "process {process} read {topic}/{partition} offset {from_offset} then {to_offset} "
                         "(op {index}) with no rebalance or truncation report in between",
    "nonmonotonic-send": "process {process}'s sends to {topic}/{partition} got offset {from_offset} then "
                         "{to_offset} (send invoked at op {index})",
    "key-order": "key {key}: process {process} sent {first} (p{first_partition}) before {second} "
                 "(p{second_partition}), delivered at op {first_delivered} and op {second_delivered}: {reason}",
    "truncation-undetected": "process {process} read {value} at {topic}/{partition} offset {offset} (op {index}); "
                             "that offset later held {later} and the process never reported truncation at or "
                             "before it",
    "write-to-readonly": "send {value} by process {process} (invoked at op {index}) was acknowledged at "
                         "{topic}/{partition} offset {offset} although the partition was {mode} since op "
                         "{mode_index}",
    "coordinator-split": "group {group} was served by coordinator partitions {partitions}",
}


@dataclass
class Found:
    """One check's outcome from an engine: `count` anomalies, the first `rows`, extra counts."""

    count: int
    rows: list[Row]
    counts: dict[str, int] = field(default_factory=dict)


def _text(v: Any) -> Any:
    """Lists read as prose: values joined by "; ", a position [topic, partition, offset] as t/p@o."""
    if isinstance(v, list):
        if len(v) == 3 and isinstance(v[0], str) and all(isinstance(x, int) for x in v[1:]):
            return f"{v[0]}/{v[1]}@{v[2]}"
        return "; ".join(str(_text(x)) for x in v)
    return v


def result(name: str, found: Found) -> CheckResult:
    witnesses = []
    for row in found.rows[:MAX_WITNESSES]:
        text = EXPLAIN[name].format(**{k: _text(v) for k, v in row.items()})
        witnesses.append({"explanation": text, **row})
    return CheckResult(name, found.count == 0, {"anomalies": found.count, **found.counts}, witnesses)
