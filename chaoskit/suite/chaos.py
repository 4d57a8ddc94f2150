"""What a chaos test function gets: the `chaos` fixture's object.

    @pytest.mark.chaos(faults=EXPANSION, workload="keyed-sequences", duration=20,
                       epic="KIP-253", feature="expansion under leader isolation")
    def test_order_across_expansion(chaos):
        result = chaos.run(topics=[Topic("orders", 4)], client=chaos.pick(patched="ordered", unpatched="kafka-python"))
        chaos.expect(result, unpatched={"key-order"})

A test runs once per profile the session asks for (`--chaos-profile`, both by default). The
marker's keywords are the ChaosTest's defaults, the command line's options (duration, backend,
Spark master, reports) win over them, and `run()`'s keywords win over both. The seed is the
exception, as in Hypothesis: a seed in the marker (`@pytest.mark.chaos(seed=5)`) pins the test and
wins over the session's (`--chaos-seed`, or drawn and printed). `expect` is the suite's claim:
the patched profile checks clean; the unpatched one is caught, its run showing at least the
anomaly kinds given. A failure's message names the anomaly (for Allure's categories) and ends
with both ways to replay it: the seed in the marker, or the command.
"""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from chaoskit.checkers.situate import witness_text
from chaoskit.reporting.summary import page_quietly
from chaoskit.run.chaostest import ChaosTest, RunResult, chaoskit_command, on_its_broker
from chaoskit.run.runner import run

PATCHED, UNPATCHED = "patched", "unpatched"
# marker keyword -> ChaosTest field, where the names differ
MARKER_FIELDS = {"duration": "duration_s"}
LABEL_KEYS = ("epic", "feature", "story", "severity")
# marker keywords that are about the test, not its ChaosTest
TEST_KEYS = (*LABEL_KEYS, "profiles", "clients", "guarantee")


class ChaosFailure(AssertionError):
    """A chaos test's claim did not hold; the message ends with the replay command."""


@dataclass(frozen=True)
class RunOptions:
    """The command line's say over every ChaosTest of the session (None: not given)."""

    seed: int
    backend: str | None = None
    broker: str | None = None  # --chaos-broker, --chaos-broker-storage, --chaos-brokers
    broker_storage: str | None = None
    brokers: int | None = None
    duration_s: float | None = None
    spark_master: str | None = None
    engine: str | None = None
    reports: Path | None = None
    keep: bool = False
    dry_run: bool = False
    mutations: tuple[str, ...] = ()  # elements of the proposals turned off (chaoskit mutate)
    round_trip: bool = False  # after each run, export its history, read it back: the checks must agree
    explore_s: float | None = None  # --chaos-explore: search schedules for this long instead of one run

    def fields_for(self, marker: dict[str, Any]) -> dict[str, Any]:
        """The ChaosTest fields these options set for a test with `marker`: the marker's seed wins."""
        given = {"backend": self.backend, "broker": self.broker, "broker_storage": self.broker_storage,
                 "brokers": self.brokers, "duration_s": self.duration_s, "spark_master": self.spark_master,
                 "engine": self.engine, "reports": self.reports, "mutations": list(self.mutations) or None}
        return {**{k: v for k, v in given.items() if v is not None},
                **({} if "seed" in marker else {"seed": self.seed})}


class Chaos:
    def __init__(self, profile: str, name: str, nodeid: str, marker: dict[str, Any], options: RunOptions,
                 report: Callable[[RunResult], Any] | None = None, client: str | None = None) -> None:
        self.profile, self.name, self.nodeid, self.client = profile, name, nodeid, client
        self.marker, self.options, self.report = marker, options, report
        self.results: list[RunResult] = []

    def pick(self, patched: Any, unpatched: Any) -> Any:
        """The value for this profile: e.g. the ordered client on patched, a stock one on unpatched."""
        return patched if self.profile == PATCHED else unpatched

    def test(self, **overrides: Any) -> ChaosTest:
        """The ChaosTest this test function would run: marker, then options, then `overrides`."""
        known = {f.name for f in fields(ChaosTest)}
        values: dict[str, Any] = {"name": self.name, "profile": self.profile}
        if self.client is not None:
            values["client"] = self.client  # the case's client; a `client=` in the marker or the call wins
        for key, value in self.marker.items():
            if key in TEST_KEYS:
                continue
            field_name = MARKER_FIELDS.get(key, key)
            if field_name not in known:
                raise TypeError(f"@pytest.mark.chaos: unknown keyword {key!r}; "
                                f"use one of {sorted(set(MARKER_FIELDS) | known - {'name', 'profile'})}")
            values[field_name] = value
        values.update(self.options.fields_for(self.marker))
        values.update(overrides)
        values["labels"] = {**{k: str(self.marker[k]) for k in LABEL_KEYS if k in self.marker},
                            **values.get("labels", {})}
        test = on_its_broker(ChaosTest(**values))
        return replace(test, replay=self.replay_command(test))

    def replay_command(self, test: ChaosTest) -> str:
        args = ["pytest", self.nodeid, f"--chaos-seed={test.seed}", f"--chaos-duration={test.duration_s:g}",
                f"--chaos-backend={test.backend}", f"--chaos-profile={test.profile}"]
        if test.broker != ChaosTest.broker:
            args.append(f"--chaos-broker={test.broker}")
            if test.broker_storage:
                args.append(f"--chaos-broker-storage={test.broker_storage}")
            args.append(f"--chaos-brokers={test.brokers}")
        if test.mutations:
            args.append(f"--chaos-mutation={','.join(test.mutations)}")
        if self.client is not None and self.nodeid.endswith(f"-{self.client}]"):  # a case named by its client
            args.append(f"--chaos-client={self.client}")
        return " ".join(shlex.quote(a) for a in args)

    def run(self, test: ChaosTest | None = None, **overrides: Any) -> RunResult:
        test = test or self.test(**overrides)
        if self.options.dry_run:
            self._dry_run(test)
        if self.options.explore_s is not None:
            result = self._explored(test, self.options.explore_s)
        else:
            result = run(test, progress=True, keep=self.options.keep)
        self.results.append(result)
        if self.options.round_trip:
            check_round_trip(result)
        if self.report is not None:
            self.report(result)
        return result

    def _explored(self, test: ChaosTest, budget_s: float) -> RunResult:
        """--chaos-explore: a search from this test's own spec (its story is the first schedule tried),
        until its first finding or the budget; then one run that the claim judges: the finding's
        shrunk schedule (its replay is the finding's test.json), or this test as it is."""
        from chaoskit.cluster.spec import new_run_id
        from chaoskit.explore.search import Explorer, Settings
        from chaoskit.run.chaostest import TEST_FILE

        out = Path(test.reports) / "explore" / new_run_id()
        found = Explorer(Settings(test, out, test.seed, budget_s, shrink_budget_s=budget_s)).run()
        summary = {"folder": str(out), "runs": found.runs, "coverage": found.coverage, "finding": None}
        if found.findings:
            f = found.findings[0]
            summary["finding"] = {"check": f.check, "folder": str(f.folder), "replays": f.replays}
            replay_file = f.folder / TEST_FILE
            test = replace(ChaosTest.from_json(json.loads(replay_file.read_text())), replay=f"{chaoskit_command()} run {replay_file}")
        result = run(test, progress=True, keep=self.options.keep)
        result.stats["explore"] = summary
        return result

    def _dry_run(self, test: ChaosTest) -> None:
        """--chaos-dry-run: the test's test.json and schedule, written where a run would keep them."""
        import pytest

        from chaoskit.run.chaostest import TEST_FILE, schedule_for

        where = Path(test.reports) / "dry-run" / re.sub(r"[^A-Za-z0-9_.-]+", "_", self.nodeid)
        where.mkdir(parents=True, exist_ok=True)
        (where / TEST_FILE).write_text(json.dumps(test.to_json(), indent=1) + "\n")
        schedule = schedule_for(test)
        if schedule is not None:
            schedule.write(where)
        pytest.skip(f"dry run: schedule and test.json written to {where}")

    def expect(self, result: RunResult, unpatched: Iterable[str] = (), patched: Iterable[str] = (),
               refused: Iterable[str] = (), evidence: Evidence | None = None) -> None:
        """The profile's claim: clean (no anomaly expected), or caught (each expected kind found).
        `refused`: scripted steps (fault names) this profile must refuse, e.g. a guarded expansion.
        `evidence`: what the run must have exercised for the claim to mean anything, as check ->
        {count: at least}, e.g. {"key-order": {"moved_pairs": 5}}, or a staged fault -> {"steps": n},
        the steps its story recorded (`pick` it per profile if they differ)."""
        expected = set(patched if result.test.profile == PATCHED else unpatched)
        explored = result.stats.get("explore")
        if explored:  # the search's claim is over every schedule it tried, not one run's evidence
            evidence = None
            found = explored.get("finding")
            if found and not expected and result.verdict.valid is True:
                _fail(result, f"explore found {found['check']} in the {result.test.profile} profile (shrunk schedule "
                              f"failed in {found['replays']} replays; {found['folder']}), though this replay of it "
                              "checked clean")
            if expected and result.anomalies:
                expected = set(result.anomalies)  # caught is caught: the search's finding need not be the story's kind
        if self.claimed(result) == "not claimed":
            _not_claimed(result, self.marker.get("guarantee"), evidence or {})
        result.expected = expected
        page_quietly(result)  # its page now tells a catch the run exists for from a failure
        expect_verdict(result, expected, set(refused), evidence or {})

    def claimed(self, result: RunResult) -> str:
        """What the run's client claims of the guarantee the test is about (suite.guarantees.expectation)."""
        from chaoskit.pluginmanager import lookup
        from chaoskit.run.guarantees import claims_of, expectation

        try:
            claims = claims_of(lookup("clients", result.test.client))
        except ValueError:
            claims = frozenset()
        return expectation(self.marker.get("guarantee"), result.test.profile, claims)


Evidence = Mapping[str, Mapping[str, int]]


def check_round_trip(result: RunResult) -> None:
    """Fail the test if the run's history, exported to Jepsen EDN and read back, checks differently
    (run/round_trip.py); the exported copy stays in the run directory as history.edn."""
    from chaoskit.run.round_trip import round_trip_differences

    if not result.history.is_file():
        return
    diffs = round_trip_differences(result.history, result.run_dir / "history.edn")
    if diffs:
        _fail(result, "export -> check round trip differs: " + "; ".join(diffs))


def missing_evidence(result: RunResult, evidence: Evidence) -> list[str]:
    """What the run fell short of, one phrase per count ("key-order moved_pairs 2 < 5")."""
    short = []
    steps = result.stats.get("fault_steps", {})
    for name, needs in evidence.items():
        r = result.verdict.results.get(name)
        counts = r.counts if r is not None else {"steps": len(steps[name])} if name in steps else None
        for count, least in needs.items():
            have = counts.get(count, 0) if counts is not None else 0
            if have < least:
                short.append(f"{name} {count} {have} < {least}" if counts is not None else f"{name} did not run")
    return short


def expect_verdict(result: RunResult, expected: set[str], refused: set[str] = frozenset(),
                   evidence: Evidence = {}) -> None:  # noqa: B006 -- read only
    """Raise ChaosFailure unless the run is clean (nothing expected) or shows every expected anomaly,
    its scripted steps went through (those in `refused` must have failed instead), and it exercised
    what the claim needs (`evidence`: else the verdict is unknown, never clean)."""
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
    found = sorted(result.anomalies)
    if found and not expected:  # an anomaly seen is seen, however little else the run exercised
        first = verdict.results[found[0]]
        witness = witness_text(first.witnesses[0]) if first.witnesses else ""
        _fail(result, f"anomaly {', '.join(found)} in the {result.test.profile} profile, which must check clean"
                      f"{': ' + witness if witness else ''}")
    short = missing_evidence(result, evidence)
    if short:
        _fail(result, f"verdict unknown: the run did not exercise what this claim needs ({'; '.join(short)}), so "
                      f"its verdict ({verdict.valid}) proves nothing")
    if not expected:
        if verdict.valid is True:
            return
        _fail(result, f"verdict unknown: {verdict.reason}")
    missing = expected - result.anomalies
    if missing:
        _fail(result, f"not caught: {', '.join(sorted(missing))} expected in the {result.test.profile} profile, "
                      f"found {', '.join(sorted(result.anomalies)) or 'no anomaly'}: the checks could not catch a "
                      f"known-broken system")


def _not_claimed(result: RunResult, guarantee: str | None, evidence: Evidence) -> None:
    """A client-side guarantee the client does not claim: reported with what was seen, never failed."""
    import pytest

    seen = ", ".join(sorted(result.anomalies)) or ("nothing" if result.valid is True else f"verdict {result.valid}")
    short = missing_evidence(result, evidence)
    result.stats["claim"] = {"guarantee": guarantee, "claimed": False, "seen": seen}
    pytest.skip(f"not claimed: the {result.test.client} client does not claim {guarantee}; on the patched profile "
                f"its run found {seen}{' (not exercised: ' + '; '.join(short) + ')' if short else ''} "
                f"[run {result.run_id}: {result.run_dir}]")


def _fail(result: RunResult, message: str) -> None:
    from chaoskit.reporting.allure_report import attach_node_logs

    attach_node_logs(result.run_dir)
    stats = result.stats
    detail = (f"\nrun {result.run_id}: {stats.get('ops', 0)} ops, {stats.get('acked', 0)} acknowledged, "
              f"logs in {Path(result.run_dir)}")
    if stats.get("kept"):
        detail += (f"\ncluster kept up: bootstrap servers {stats['kept']['bootstrap_servers']}; "
                   f"take it down with: {stats['kept']['down']}")
    if result.test.replay:  # a pytest run: the seed can also be pinned in the test itself
        detail += f"\nto replay, add seed={result.test.seed} to this test's @pytest.mark.chaos, or run either of:"
    raise ChaosFailure(f"{message}{detail}\n" + "\n".join(f"replay: {r}" for r in result.replays))
