"""The search: runs schedules, keeps those that reached new protocol states, mutates them, and
stops at its budget or its first finding.

    explorer = Explorer(Settings(base=test, out=Path("reports/explore/x"), seed=7, budget_s=600))
    result = explorer.run()         # result.findings: [Finding(check, folder, steps, ...)]

Strategy `coverage` (the default) starts from the base test's own schedule (a suite's story) and a
few random ones, then mostly edits schedules of its corpus (edits.py), choosing the ones whose
features are rarest (corpus.py). Strategy `random` draws every schedule afresh from the same
grammar: the baseline the coverage-guided search must beat (benchmarks/explore.py). Everything
random flows from the seed: run n's schedule is drawn from `seed/n` given what runs before it
found. Runs go to a pool of lanes (kept clusters, one worker process each).
"""
from __future__ import annotations

import json
import random
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from chaoskit.run.options import seconds
from chaoskit.explore import coverage as cov
from chaoskit.explore.corpus import Corpus
from chaoskit.explore.edits import edited
from chaoskit.explore.finding import write_finding
from chaoskit.explore.files import read_json, write_atomically
from chaoskit.explore.grammar import Grammar
from chaoskit.explore.oracle import excused
from chaoskit.explore.pool import LanePool
from chaoskit.explore.steps import Step, StepSchedule, to_test
from chaoskit.run.chaostest import RESULTS_FILE, ChaosTest, schedule_for

STRATEGIES = ("coverage", "random")
UNTIL = ("anomaly", "budget")
FRESH_SHARE = 0.1  # of the guided runs, how many draw a schedule afresh


def parse_budget(text: str) -> float:
    """A budget ("10m", "90s", "1h30m" or plain seconds) in seconds; ValueError saying the form."""
    return seconds(text)


@dataclass
class Settings:
    base: ChaosTest
    out: Path
    seed: int = 0
    budget_s: float = 600.0
    strategy: str = "coverage"
    until: str = "anomaly"
    jobs: int = 1
    shrink: bool = True
    shrink_budget_s: float = 600.0
    faults: list[str] | None = None  # the grammar's faults (default: every registered one)
    keep_runs: bool = False  # keep every run's folder, not only those that added something

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base.to_json(), "seed": self.seed, "strategy": self.strategy, "until": self.until,
                "jobs": self.jobs, "shrink": self.shrink, "faults": self.faults, "budget_s": self.budget_s}

    @classmethod
    def from_json(cls, data: dict[str, Any], out: Path) -> Settings:
        return cls(ChaosTest.from_json(data["base"]), out, data["seed"], data.get("budget_s", 600.0),
                   data["strategy"], data["until"], data.get("jobs", 1), data.get("shrink", True),
                   faults=data.get("faults"))


@dataclass
class Finding:
    check: str
    folder: Path
    schedule: StepSchedule
    run: int
    at_s: float  # seconds into the explore when it was found
    shrunk: StepSchedule | None = None
    replays: tuple[int, int] | None = None  # (failed, of) when the result was replayed
    results: dict[str, Any] = field(default_factory=dict, repr=False)  # the failing run's results.json
    unmutated: bool = False  # it failed with the base's mutations taken off too: the system's own, not theirs

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "folder": str(self.folder), "run": self.run, "at_s": round(self.at_s, 1),
                "unmutated": self.unmutated,
                "steps": len(self.schedule.steps), "shrunk_steps": len(self.shrunk.steps) if self.shrunk else None,
                "replays": list(self.replays) if self.replays else None}


@dataclass
class Outcome:
    """One run of a schedule, as the search sees it."""

    n: int
    schedule: StepSchedule
    test: ChaosTest
    run_dir: Path | None
    results: dict[str, Any]
    coverage: cov.RunCoverage
    findings: set[str]
    excused: dict[str, str]
    seconds: float
    error: str | None = None

    @property
    def verdict(self) -> dict[str, Any]:
        return self.results.get("verdict") or {}


@dataclass
class ExploreResult:
    out: Path
    runs: int
    coverage: int
    seconds: float
    findings: list[Finding] = field(default_factory=list)
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    unmutated: list[Finding] = field(default_factory=list)  # anomalies without the base's mutations too
    flaky: list[Finding] = field(default_factory=list)  # anomalies its replays did not bear out

    @property
    def first_finding_s(self) -> float | None:
        return min((f.at_s for f in self.findings), default=None)

    def to_json(self) -> dict[str, Any]:
        return {"out": str(self.out), "runs": self.runs, "coverage": self.coverage, "seconds": round(self.seconds, 1),
                "first_finding_s": self.first_finding_s, "findings": [f.to_json() for f in self.findings],
                "unmutated": [f.to_json() for f in self.unmutated], "flaky": [f.to_json() for f in self.flaky],
                "timeline": self.timeline}


def grammar_for(base: ChaosTest, faults: list[str] | None = None) -> Grammar:
    """The grammar over the base test's topics and the registry's faults (or those named), those the
    base's broker can take (a fault needing what it lacks is never drawn; named, it is refused)."""
    from chaoskit.pluginmanager import broker_kind
    from chaoskit.pluginmanager import collect, get_plugin_manager

    pm = get_plugin_manager()
    found = collect(pm, "faults")
    registered = sorted(found)
    unknown = sorted(set(faults or ()) - set(registered))
    if unknown:
        raise ValueError(f"no fault named {', '.join(unknown)}; installed: {', '.join(registered)}")
    kind = broker_kind(base.broker, pm)
    has = kind.has(base.broker_storage)
    client = client_factory(base.client)
    for name in faults or ():
        lacks = None if client_can(client, found[name]) else ", ".join(found[name].client_needs)
        why = kind.lacking(getattr(found[name], "needs", ()), base.broker_storage) or (
            lacks and f"client {base.client} lacks {lacks}")
        if why:
            raise ValueError(f"fault {name}: {why}")
    usable = [f for f in faults or registered
              if getattr(found[f], "needs", frozenset()) <= has and client_can(client, found[f])]
    fixed = {k: v for t in base.topics for k, v in t.config.items()}
    return Grammar.for_faults(usable, {t.name: t.partitions for t in base.topics}, base.duration_s,
                              base.brokers, collect(pm, "steps"), fixed, has)


def client_factory(name: str) -> Any:
    """The client plugin registered as `name` (None when it is not installed)."""
    from chaoskit.pluginmanager import lookup

    try:
        return lookup("clients", name)
    except ValueError:
        return None


def client_can(client: Any, fault: Any) -> bool:
    """Whether the client (its plugin class; None: unknown, so yes) has what the fault needs of it."""
    return client is None or all(hasattr(client, m) for m in getattr(fault, "client_needs", ()))


def client_claims(name: str) -> frozenset[str] | None:
    """The guarantees the client claims (None when it is not installed: then it is held to all)."""
    from chaoskit.run.guarantees import claims_of

    client = client_factory(name)
    return None if client is None else claims_of(client)


def base_schedule(base: ChaosTest, grammar: Grammar) -> StepSchedule | None:
    """The base test's own fault windows (a suite's story and its seeded faults) as a schedule."""
    schedule = schedule_for(base)
    if schedule is None:
        return None
    steps = [Step(w.name, w.start_s, round(max(0.1, w.stop_s - w.start_s), 3), w.target, dict(w.params), w.pick)
             for w in schedule.windows if w.name in grammar.kinds]
    repaired = grammar.repaired(StepSchedule(tuple(steps), {}))
    return repaired if repaired.steps else None


class Explorer:
    def __init__(self, settings: Settings, say: Callable[[str], Any] = print, resume: bool = False,
                 pool: Callable[[Path, int], Any] = LanePool) -> None:
        self.s = settings
        self.say = say
        self.pool = pool  # what runs the tests: lanes of kept clusters
        self.grammar = grammar_for(settings.base, settings.faults)
        self.corpus = Corpus.open(settings.out, None if resume else settings.to_json())
        self.findings: list[Finding] = []  # the anomalies this search found (of the mutations, with some on)
        self.unmutated: list[Finding] = []  # with mutations on: anomalies the system shows without them too
        self.flaky: list[Finding] = []  # findings that failed in fewer than 2 of 3 replays once shrunk
        self._n = 0  # the next run's number
        self.topics = {t.name for t in settings.base.topics}
        self.claims = client_claims(settings.base.client)
        self._began = 0.0
        self._elapsed_before = self.corpus.timeline[-1][0] if self.corpus.timeline else 0.0
        # the kinds of step some run has tried (a resume: those its corpus holds)
        self._tried = {step.fault for e in self.corpus.entries.values() for step in e.schedule.steps}

    # --- the loop ---------------------------------------------------------------------------------------
    def run(self) -> ExploreResult:
        s = self.s
        self._began = time.monotonic()
        pool = self._pool = self.pool(s.out, s.jobs)
        self.say(f"chaoskit explore: {s.strategy} search of {s.base.name} ({s.base.profile}, {s.base.client} client"
                 f"{', mutation ' + ','.join(s.base.mutations) if s.base.mutations else ''}), seed {s.seed}, "
                 f"budget {s.budget_s:g} s, {s.jobs} lane(s), until {s.until}; folder {s.out}")
        try:
            while True:
                self._search(pool)
                if not (s.shrink and self.findings):
                    break
                from chaoskit.explore.shrink import NEEDED, shrink_finding

                for finding in self._to_shrink():
                    shrink_finding(self, pool, finding)
                # a finding its replays do not bear out (fewer than 2 of 3) is kept apart, and the search goes on
                flaky = [f for f in self.findings if f.replays is not None and f.replays[0] < NEEDED]
                for f in flaky:
                    self.findings.remove(f)
                    self.flaky.append(f)
                    self.corpus.findings.pop(f.check, None)
                    self.say(f"  {f.check} failed in {f.replays[0]} of {f.replays[1]} replays: kept as flaky "
                             f"({f.folder}), not a finding")
                if not flaky or s.until != "anomaly" or self._spent() >= s.budget_s:
                    break
        finally:
            pool.close()
        result = ExploreResult(s.out, self.corpus.runs, self.corpus.coverage, self._elapsed(), self.findings,
                               self.corpus.timeline, self.unmutated, self.flaky)
        write_atomically(s.out / "result.json", json.dumps(result.to_json(), indent=1) + "\n")
        self.say(f"chaoskit explore: {result.runs} runs, coverage {result.coverage}, "
                 f"{len(self.findings)} finding(s) in {result.seconds:.0f} s; folder {s.out}")
        return result

    def _search(self, pool: Any) -> None:
        """Runs, `jobs` at a time, until the budget is spent or (until anomaly) a finding arrived."""
        s = self.s
        pending: dict[Future[dict[str, Any]], tuple[int, StepSchedule, ChaosTest, str, list[str]]] = {}
        while True:
            stop = self._spent() >= s.budget_s or (s.until == "anomaly" and self.findings)
            while not stop and len(pending) < s.jobs:
                n = self._n = max(self._n, self.corpus.runs)
                self._n += 1
                if s.strategy == "coverage":  # the plain random search is the baseline: no favours
                    self.grammar.novel = frozenset(self.grammar.kinds) - self._tried
                schedule, parent, edits = self._next(n)
                self._tried.update(step.fault for step in schedule.steps)
                test = self.test_of(schedule, n, self._seed_of(n))
                pending[pool.submit(test)] = (n, schedule, test, parent, edits)
            if not pending:
                return
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in done:
                self._arrived(future, *pending.pop(future))

    def _elapsed(self) -> float:
        """Seconds of this explore, those before a resume included (the runs' `at_s`)."""
        return self._elapsed_before + self._spent()

    def _spent(self) -> float:
        """Seconds since this run of the explore began: what its budget bounds (a resume gets a new one)."""
        return time.monotonic() - self._began

    def _seed_of(self, n: int) -> int:
        return random.Random(f"{self.s.seed}/{n}/seed").getrandbits(31)

    def _next(self, n: int) -> tuple[StepSchedule, str, list[str]]:
        """Run n's schedule: the base's own first, then (guided) an edit of a kept one, or a fresh draw."""
        rng = random.Random(f"{self.s.seed}/{n}")
        seeded = base_schedule(self.s.base, self.grammar) if n == 0 and self.s.strategy == "coverage" else None
        if seeded is not None:
            return seeded, "base", []
        entries = list(self.corpus.entries.values())
        if self.s.strategy == "random" or len(entries) < 2 or rng.random() < FRESH_SHARE:
            return self.grammar.random_schedule(rng), "fresh", []
        weights = [self.corpus.rarity(e) for e in entries]
        parent = rng.choices(entries, weights)[0]
        parent.chosen += 1
        other = rng.choice(entries).schedule
        schedule, edits = edited(rng, parent.schedule, self.grammar, other)
        if not edits:
            return self.grammar.random_schedule(rng), "fresh", []
        return schedule, parent.schedule.digest, edits

    def test_of(self, schedule: StepSchedule, n: int, seed: int, tag: str = "") -> ChaosTest:
        """Run n's test (a replay of it: `tag`): its own topics and group, its folder in the explore's."""
        return to_test(self.s.base, schedule, f"{self.s.base.name}-x{n}{tag}", seed, suffix=f"-x{n}{tag}",
                       reports=self.s.out, duration_s=self.grammar.run_length(schedule))

    # --- a run's outcome ----------------------------------------------------------------------------------
    def outcome(self, n: int, schedule: StepSchedule, test: ChaosTest, answer: dict[str, Any] | None,
                error: str | None = None) -> Outcome:
        """What a run came to: its coverage, its findings and what its steps excuse."""
        answer = answer or {}
        error = error or answer.get("error")
        run_dir = Path(answer["run_dir"]) if answer.get("run_dir") else None
        results = read_json(run_dir / RESULTS_FILE) if run_dir else {}
        coverage = cov.of_run(run_dir) if run_dir else cov.RunCoverage(frozenset(), ())
        anomalies = {name for name, r in (results.get("verdict") or {}).get("results", {}).items()
                     if r.get("valid") is False}
        why = excused(results.get("verdict") or {}, schedule, coverage, {t.name for t in test.topics},
                      test.duration_s + test.drain_timeout_s, self.claims)
        error = error or results.get("error")
        findings = set() if error else anomalies - set(why)
        return Outcome(n, schedule, test, run_dir, results, coverage, findings, why, answer.get("seconds", 0.0), error)

    def _arrived(self, future: Future[dict[str, Any]], n: int, schedule: StepSchedule, test: ChaosTest,
                 parent: str, edits: list[str]) -> None:
        try:
            out = self.outcome(n, schedule, test, future.result())
        except Exception as e:  # noqa: BLE001 -- a lane that broke: the run counts, with its error
            out = self.outcome(n, schedule, test, None, f"{type(e).__name__}: {e}")
        line = {"n": n, "at_s": round(self._elapsed(), 1), "schedule": schedule.digest, "parent": parent,
                "edits": edits, "steps": len(schedule.steps), "valid": out.results.get("valid"),
                "findings": sorted(out.findings), "excused": out.excused, "error": out.error,
                "seconds": round(out.seconds, 1), "run_dir": str(out.run_dir) if out.run_dir else None}
        fresh = [c for c in sorted(out.findings) if c not in self.corpus.findings]
        own = {c for c in fresh if self.s.base.mutations and self._fails_unmutated(out, c)}
        line["unmutated"] = sorted(own)
        new = self.corpus.note(line, schedule, out.coverage.features)
        for check in fresh:
            self._found(check, out, unmutated=check in own)
        if out.run_dir is not None and out.run_dir.is_dir() and not (new or out.findings or self.s.keep_runs):
            self.corpus.drop_run(out.run_dir)
        rate = self.corpus.runs / max(self._elapsed(), 1e-9) * 60
        valid = out.results.get("valid")
        # an anomaly the run's steps or the client's claims excuse is no finding: say which
        verdict = "FOUND " + ",".join(sorted(out.findings)) if out.findings else "error" if out.error else \
            "clean" if valid is True else f"excused {','.join(sorted(out.excused))}" if valid is False and out.excused \
            else str(valid)
        self.say(f"  run {n}: {verdict} ({len(schedule.steps)} steps, {out.seconds:.1f} s); coverage "
                 f"{self.corpus.coverage} (+{len(new)}), corpus {len(self.corpus.entries)}, "
                 f"{rate:.1f} runs/min, findings {len(self.corpus.findings)}")

    def _found(self, check: str, out: Outcome, unmutated: bool = False) -> None:
        """A new kind of finding: its folder written now, before anything else can go wrong."""
        folder = self.corpus.finding_dir(check, out.schedule)
        write_finding(folder, self.s.base, out.schedule, out.test.seed, out.results, check, "found",
                      run_dir=out.run_dir, duration_s=out.test.duration_s)
        finding = Finding(check, folder, out.schedule, out.n, self._elapsed(), results=out.results, unmutated=unmutated)
        if unmutated:  # the system's own anomaly: kept and reported, but no catch of the mutations
            self.unmutated.append(finding)
            self.say(f"  FINDING {check} in run {out.n} also without {', '.join(self.s.base.mutations)} (a finding "
                     f"of the system itself, not a catch of the mutation): {folder}")
            return
        self.corpus.findings[check] = folder.name
        self.findings.append(finding)
        self.say(f"  FINDING {check} in run {out.n} after {finding.at_s:.0f} s ({len(out.schedule.steps)} steps): "
                 f"{folder}")

    def _fails_unmutated(self, out: Outcome, check: str, tries: int = 2) -> bool:
        """With mutations on, a finding is theirs only if the same test without them does not show it:
        replayed without them (up to `tries` times), does it?"""
        for k in range(tries):
            test = replace(self.test_of(out.schedule, out.n, out.test.seed, tag=f"-u{k}"), mutations=[])
            try:
                answer = self._pool.submit(test).result()
            except Exception as e:  # noqa: BLE001 -- a replay that broke shows nothing
                answer = {"error": f"{type(e).__name__}: {e}"}
            replayed = self.outcome(out.n, out.schedule, test, answer)
            if replayed.run_dir is not None:
                self.corpus.drop_run(replayed.run_dir)
            if check in replayed.findings:
                return True
        return False

    def _to_shrink(self) -> list[Finding]:
        todo = [f for f in self.findings if f.shrunk is None]
        return todo[:1] if self.s.until == "anomaly" else todo
