"""What a chaos test function gets: the `chaos` fixture's object.

    @pytest.mark.chaos(faults=EXPANSION, workload="keyed-sequences", duration=20,
                       epic="KIP-253", feature="expansion under leader isolation")
    def test_order_across_expansion(chaos):
        result = chaos.run(topics=[Topic("orders", 4)], client=chaos.pick(patched="ordered", unpatched="kafka-python"))
        chaos.expect(result, unpatched={"key-order"})

A test runs once per profile the session asks for (`--chaos-profile`, both by default). The
marker's keywords are the ChaosTest's defaults, the command line's options (seed, duration,
backend, Spark master, reports) win over them, and `run()`'s keywords win over both. `expect`
is the suite's claim: the patched profile checks clean; the unpatched one is caught, its run
showing at least the anomaly kinds given. A failure's message names the anomaly (for Allure's
categories) and ends with the command that replays the run.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Iterable

from chaoskit.runner import ChaosTest, RunResult, run

PATCHED, UNPATCHED = "patched", "unpatched"
# marker keyword -> ChaosTest field, where the names differ
MARKER_FIELDS = {"duration": "duration_s"}
LABEL_KEYS = ("epic", "feature", "story", "severity")


class ChaosFailure(AssertionError):
    """A chaos test's claim did not hold; the message ends with the replay command."""


class Chaos:
    def __init__(self, profile: str, name: str, nodeid: str, marker: dict[str, Any], options: dict[str, Any],
                 report: Any = None) -> None:
        self.profile, self.name, self.nodeid = profile, name, nodeid
        self.marker, self.options, self.report = marker, options, report
        self.results: list[RunResult] = []

    def pick(self, patched: Any, unpatched: Any) -> Any:
        """The value for this profile: e.g. the ordered client on patched, a stock one on unpatched."""
        return patched if self.profile == PATCHED else unpatched

    def test(self, **overrides: Any) -> ChaosTest:
        """The ChaosTest this test function would run: marker, then options, then `overrides`."""
        known = {f.name for f in fields(ChaosTest)}
        values: dict[str, Any] = {"name": self.name, "profile": self.profile}
        for key, value in self.marker.items():
            if key in LABEL_KEYS or key == "profiles":
                continue
            field_name = MARKER_FIELDS.get(key, key)
            if field_name not in known:
                raise TypeError(f"@pytest.mark.chaos: unknown keyword {key!r}; "
                                f"use one of {sorted(set(MARKER_FIELDS) | known - {'name', 'profile'})}")
            values[field_name] = value
        values.update({k: v for k, v in self.options.items() if v is not None and k not in ("keep", "dry_run")})
        values.update(overrides)
        values["labels"] = {**{k: str(self.marker[k]) for k in LABEL_KEYS if k in self.marker},
                            **values.get("labels", {})}
        test = ChaosTest(**values)
        return replace(test, replay=self.replay_command(test))

    def replay_command(self, test: ChaosTest) -> str:
        args = ["pytest", self.nodeid, f"--chaos-seed={test.seed}", f"--chaos-duration={test.duration_s:g}",
                f"--chaos-backend={test.backend}", f"--chaos-profile={test.profile}"]
        return " ".join(shlex.quote(a) for a in args)

    def run(self, test: ChaosTest | None = None, **overrides: Any) -> RunResult:
        test = test or self.test(**overrides)
        if self.options.get("dry_run"):
            self._dry_run(test)
        result = run(test, progress=True, keep=bool(self.options.get("keep")))
        self.results.append(result)
        if self.report is not None:
            self.report(result)
        return result

    def _dry_run(self, test: ChaosTest) -> None:
        """--chaos-dry-run: the test's test.json and schedule, written where a run would keep them."""
        import json

        import pytest

        from chaoskit.runner import TEST_FILE, schedule_for

        where = Path(test.reports) / "dry-run" / re.sub(r"[^A-Za-z0-9_.-]+", "_", self.nodeid)
        where.mkdir(parents=True, exist_ok=True)
        (where / TEST_FILE).write_text(json.dumps(test.to_json(), indent=1) + "\n")
        schedule = schedule_for(test)
        if schedule is not None:
            schedule.write(where)
        pytest.skip(f"dry run: schedule and test.json written to {where}")

    def expect(self, result: RunResult, unpatched: Iterable[str] = (), patched: Iterable[str] = (),
               refused: Iterable[str] = ()) -> None:
        """The profile's claim: clean (no anomaly expected), or caught (each expected kind found).
        `refused`: scripted steps (fault names) this profile must refuse, e.g. a guarded expansion."""
        expected = set(patched if result.test.profile == PATCHED else unpatched)
        expect_verdict(result, expected, set(refused))


def expect_verdict(result: RunResult, expected: set[str], refused: set[str] = frozenset()) -> None:
    """Raise ChaosFailure unless the run is clean (nothing expected) or shows every expected anomaly,
    and its scripted steps went through (those in `refused` must have failed instead)."""
    verdict = result.verdict
    if result.error:
        _fail(result, f"run broke: {result.error}")
    scripted = {step.get("fault") for step in (result.test.faults or {}).get("scripted", [])}
    failed = [e for e in result.stats.get("fault_errors", []) if e["fault"] in scripted]
    broken = [e for e in failed if e["fault"] not in refused]
    if broken:
        _fail(result, f"scripted step {broken[0]['fault']} (window {broken[0]['window']}) failed, so the run did not "
                      f"test what it claims: {broken[0]['error']}")
    went_through = refused - {e["fault"] for e in failed}
    if went_through:
        _fail(result, f"scripted step {sorted(went_through)[0]} went through in the {result.test.profile} profile, "
                      "which must refuse it")
    if not expected:
        if verdict.valid is True:
            return
        found = sorted(result.anomalies)
        if found:
            first = verdict.results[found[0]]
            witness = first.witnesses[0].get("explanation", "") if first.witnesses else ""
            _fail(result, f"anomaly {', '.join(found)} in the {result.test.profile} profile, which must check clean"
                          f"{': ' + witness if witness else ''}")
        unknown = sorted(n for n, r in verdict.results.items() if r.valid != True)  # noqa: E712 -- three-valued
        errors = "; ".join(f"{n}: {verdict.results[n].error}" for n in unknown)
        _fail(result, f"verdict unknown: {', '.join(unknown) or 'no checks ran'} could not decide ({errors})")
    missing = expected - result.anomalies
    if missing:
        _fail(result, f"not caught: {', '.join(sorted(missing))} expected in the {result.test.profile} profile, "
                      f"found {', '.join(sorted(result.anomalies)) or 'no anomaly'}: the checks could not catch a "
                      f"known-broken system")


def _fail(result: RunResult, message: str) -> None:
    from chaoskit.reporting.allure_report import attach_node_logs

    attach_node_logs(result.run_dir)
    stats = result.stats
    detail = (f"\nrun {result.run_id}: {stats.get('ops', 0)} ops, {stats.get('acked', 0)} acknowledged, "
              f"logs in {Path(result.run_dir)}")
    if stats.get("kept"):
        detail += (f"\ncluster kept up: bootstrap servers {stats['kept']['bootstrap_servers']}; "
                   f"take it down with: {stats['kept']['down']}")
    raise ChaosFailure(f"{message}{detail}\nreplay: {result.replay}")
