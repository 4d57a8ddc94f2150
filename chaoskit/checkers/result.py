"""CheckResult: what every check returns, and how verdicts combine.

`valid` is three-valued as in Jepsen: True (checked, clean), False (an anomaly, with witnesses)
or "unknown" (could not decide: the check raised, ran out of its time budget, or had nothing to
judge: `judged` False, the history held nothing it looks at). Combining verdicts, False beats
"unknown" beats True: one proven anomaly makes a run invalid, and a run with an undecided check
is never reported as a pass.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

Valid = Literal[True, False, "unknown"]
UNKNOWN: Valid = "unknown"
MAX_WITNESSES = 10  # a handful explains an anomaly; the counts say how many there were


@dataclass
class CheckResult:
    name: str
    valid: Valid
    counts: dict[str, int] = field(default_factory=dict)
    # each witness: {"explanation": one sentence a reviewer can read, plus the ops/fields proving it}
    witnesses: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # why the verdict is "unknown"
    details: dict[str, Any] = field(default_factory=dict)  # check-specific extras
    judged: bool = True  # False: the history held nothing this check looks at (valid is "unknown")

    def __post_init__(self) -> None:
        if self.valid not in (True, False, UNKNOWN):
            raise ValueError(f"valid is True, False or 'unknown', got {self.valid!r}")
        self.witnesses = list(self.witnesses)[:MAX_WITNESSES]

    @classmethod
    def unknown(cls, name: str, error: BaseException | str) -> CheckResult:
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        return cls(name, UNKNOWN, error=text)

    @classmethod
    def nothing_to_judge(cls, name: str, why: str, counts: dict[str, int] | None = None) -> CheckResult:
        return cls(name, UNKNOWN, dict(counts or {}), error=f"nothing to judge: {why}", judged=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "valid": self.valid, "counts": self.counts,
                               "witnesses": self.witnesses}
        if self.error is not None:
            out["error"] = self.error
        if self.details:
            out["details"] = self.details
        if not self.judged:
            out["judged"] = False
        return out

    @property
    def word(self) -> str:
        """How every report names this result: clean, anomaly, unknown, or not exercised (judged nothing)."""
        return "not exercised" if not self.judged else verdict_word(self.valid)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        return cls(data["name"], data["valid"], dict(data.get("counts", {})), list(data.get("witnesses", [])),
                   data.get("error"), dict(data.get("details", {})), data.get("judged", True))


def verdict_word(valid: Valid) -> str:
    return {True: "clean", False: "anomaly"}.get(valid, "unknown")  # type: ignore[call-overload]


def merge_valid(verdicts: Iterable[Valid]) -> Valid:
    """The overall verdict: False if any is False, else "unknown" if any is, else True.
    No verdicts at all is "unknown": nothing was checked, so nothing is known."""
    seen = list(verdicts)
    if not seen:
        return UNKNOWN
    if any(v is False for v in seen):
        return False
    if any(v == UNKNOWN for v in seen):
        return UNKNOWN
    return True
