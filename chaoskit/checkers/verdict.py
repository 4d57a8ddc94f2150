"""Verdict: a history's check results composed into `{name: result}` with one overall `valid`.

Overall, False (an anomaly) beats "unknown" beats True, over the checks that count: every check
that was asked for by name (`required`), and every other check that had something to judge. A
check run by default over a history that held nothing it looks at (no truncation for
truncation-undetected, say) is reported as not exercised and does not decide. Nothing judged at
all is "unknown", and so is a history with lines that could not be read (`problems`): a clean
verdict over part of a history would claim what nobody checked.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.checkers.result import UNKNOWN, CheckResult, Valid, merge_valid, verdict_word


@dataclass
class Verdict:
    results: dict[str, CheckResult]
    problems: list[str] = field(default_factory=list)
    required: list[str] | None = None  # checks asked for by name: each must judge something
    engine: str | None = None  # the engine the checks ran on ("auto" resolved); not part of the verdict

    @property
    def counted(self) -> dict[str, CheckResult]:
        """The results that decide: the required ones and every one that judged something."""
        required = set(self.required or ())
        return {n: r for n, r in self.results.items() if n in required or r.judged}

    @property
    def not_exercised(self) -> list[str]:
        return [n for n, r in self.results.items() if n not in self.counted]

    @property
    def valid(self) -> Valid:
        valid = merge_valid(r.valid for r in self.counted.values())
        if valid is True and self.problems:
            return UNKNOWN
        return valid

    @property
    def reason(self) -> str | None:
        """Why the verdict is unknown (None when it is not)."""
        if self.valid != UNKNOWN:
            return None
        undecided = {n: r.error for n, r in self.counted.items() if r.valid == UNKNOWN}
        if self.problems:
            undecided["the history"] = (f"{len(self.problems)} line(s) of the history could not be read "
                                        f"(first: {self.problems[0]})")
        if not undecided:
            return "no check had anything to judge"
        return f"{', '.join(undecided)} could not decide ({'; '.join(f'{n}: {e}' for n, e in undecided.items())})"

    @property
    def word(self) -> str:
        """The verdict as every report names it: clean, anomaly or unknown."""
        return verdict_word(self.valid)

    @property
    def tally(self) -> str:
        """What the verdict rests on, e.g. "9 checks judged, 1 not exercised" or "key-order found an
        anomaly; 8 checks judged clean, 2 not exercised"."""
        counted = self.counted
        found = sorted(n for n, r in counted.items() if r.valid is False)
        clean = sum(1 for r in counted.values() if r.valid is True)
        undecided = sum(1 for r in counted.values() if r.valid == UNKNOWN)
        parts = [f"{clean} check{'s' if clean != 1 else ''} judged clean" if found or undecided
                 else f"{clean} check{'s' if clean != 1 else ''} judged"]
        parts += [f"{undecided} unknown"] if undecided else []
        parts += [f"{len(self.not_exercised)} not exercised"] if self.not_exercised else []
        head = f"{', '.join(found)} found {'an anomaly' if len(found) == 1 else 'anomalies'}; " if found else ""
        return head + ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        out = {"valid": self.valid, "verdict": self.word, "tally": self.tally, "problems": list(self.problems),
               "results": {name: r.to_json() for name, r in self.results.items()}}
        if self.required is not None:
            out["required"] = list(self.required)
        if self.valid == UNKNOWN:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        return cls({name: CheckResult.from_json(r) for name, r in data.get("results", {}).items()},
                   list(data.get("problems", [])), data.get("required"))
