"""Verdict: a history's check results composed into `{name: result}` with one overall `valid`.

Problems (lines of the history that could not be read) are reported beside the results; the
verdict comes from the checks over the rest, as the issue asks ("the rest is still checked").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.checkers.result import CheckResult, Valid, merge_valid


@dataclass
class Verdict:
    results: dict[str, CheckResult]
    problems: list[str] = field(default_factory=list)

    @property
    def valid(self) -> Valid:
        return merge_valid(r.valid for r in self.results.values())

    def to_json(self) -> dict[str, Any]:
        return {"valid": self.valid, "problems": list(self.problems),
                "results": {name: r.to_json() for name, r in self.results.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        return cls({name: CheckResult.from_json(r) for name, r in data.get("results", {}).items()},
                   list(data.get("problems", [])))
