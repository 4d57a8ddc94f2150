"""What a check's engines hand back, and how it becomes a CheckResult, the same for both engines.

An engine (Spark or local) computes, per check, the number of anomalies, a few extra counts and
its first witnesses as plain rows (dicts of ints, strings and sorted lists) in the check's sort
order. `result()` turns them into the CheckResult with one explanation sentence per witness (the
check's `explain` in catalog.py), so the Spark and local engines agree exactly when they find the
same rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.checkers.catalog import CHECKS
from chaoskit.checkers.result import MAX_WITNESSES, CheckResult

Row = dict[str, Any]


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
    check = CHECKS[name]
    counts = {"anomalies": found.count, **found.counts}
    if found.count == 0 and check.evidence and not found.counts.get(check.evidence):
        return CheckResult.nothing_to_judge(name, check.nothing, counts)
    witnesses = []
    for row in found.rows[:MAX_WITNESSES]:
        text = check.explain.format(**{k: _text(v) for k, v in row.items()})
        witnesses.append({"explanation": text, **row})
    return CheckResult(name, found.count == 0, counts, witnesses)
