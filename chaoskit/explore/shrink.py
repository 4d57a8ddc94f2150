"""Shrinking: a failing schedule reduced to a smallest one that still fails (Hypothesis's shrinker,
delta debugging's ddmin), judged by replays since a chaos run is not deterministic.

A candidate still fails when the finding's check finds an anomaly its steps do not excuse in at
least 2 of 3 replays of the same test (the replays stop as soon as the answer is known: two
failures, or two passes). The passes go from cheap to costly, as Hypothesis's do:
1. steps: ddmin over the steps (halves, quarters, ... then single steps; a step whose precondition
   went with another is dropped with it), and last the schedule without any step;
2. windows and timings: each step's window halved, its start moved earlier (to a whole second);
3. settings: the topic's settings dropped (its defaults), all at once, else one at a time.
Each candidate accepted is written to the finding's folder at once, so a killed shrink keeps its
best. The result is then replayed three times, whatever the first two say, and replay.txt says in
how many of the three it failed.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from chaoskit.explore.finding import write_finding
from chaoskit.explore.steps import StepSchedule

REPLAYS, NEEDED = 3, 2


class Shrinker:
    def __init__(self, explorer: Any, pool: Any, finding: Any, budget_s: float) -> None:
        self.explorer, self.pool, self.finding = explorer, pool, finding
        self.deadline = time.monotonic() + budget_s
        self.seed = explorer._seed_of(finding.run)
        self.tries = 0
        self.best = finding.schedule
        self.best_replays: tuple[int, int] | None = None
        self.results: dict[str, Any] = finding.results  # the best schedule's failing run's results (its verdict)
        self.failing: tuple[dict[str, Any], Any] | None = None

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def fails(self, schedule: StepSchedule, every: bool = False) -> tuple[int, int]:
        """(failed, replayed): replays of `schedule` until 2 failed or 2 passed (all 3 with `every`);
        the first failing replay's folder is kept for the finding (`self.failing`), the others removed."""
        failed = passed = 0
        self.failing: tuple[dict[str, Any], Any] | None = None
        while (failed + passed < REPLAYS) if every else (failed < NEEDED and passed < REPLAYS - NEEDED + 1):
            wanted = REPLAYS - failed - passed if every else min(NEEDED - failed, REPLAYS - NEEDED + 1 - passed)
            futures = []
            for _ in range(max(1, min(wanted, self.pool.jobs))):
                self.tries += 1
                test = self.explorer.test_of(schedule, self.finding.run, self.seed, tag=f"-s{self.tries}")
                futures.append((test, self.pool.submit(test)))
            for test, future in futures:
                try:
                    answer = future.result()
                except Exception as e:  # noqa: BLE001 -- a broken replay is not a failure
                    answer = {"error": f"{type(e).__name__}: {e}"}
                out = self.explorer.outcome(-1, schedule, test, answer)
                if self.finding.check in out.findings:
                    failed += 1
                    if self.failing is None:
                        self.failing = (out.results, out.run_dir)
                        continue
                else:
                    passed += 1
                if out.run_dir is not None:
                    self.explorer.corpus.drop_run(out.run_dir)
        return failed, failed + passed

    def accept_if_fails(self, candidate: StepSchedule) -> bool:
        candidate = self.explorer.grammar.repaired(candidate)
        if self.out_of_time() or candidate.digest == self.best.digest:
            return False
        failed, of = self.fails(candidate)
        self.explorer.say(f"    shrink {self.finding.check}: {len(candidate.steps)} steps "
                          f"{'fail' if failed >= NEEDED else 'pass'} ({failed} of {of})")
        if failed < NEEDED:
            if self.failing is not None and self.failing[1] is not None:
                self.explorer.corpus.drop_run(self.failing[1])
            return False
        self.best, self.best_replays = candidate, (failed, of)
        self.write("shrinking", *self.failing)
        return True

    def write(self, stage: str, results: dict[str, Any] | None = None, run_dir: Any = None) -> None:

        if results:
            self.results = results
        write_finding(self.finding.folder, self.explorer.s.base, self.best, self.seed, self.results,
                      self.finding.check, stage, self.best_replays, run_dir, self.explorer.grammar.run_length(self.best))

    # --- the passes ------------------------------------------------------------------------------------------
    def steps(self) -> None:
        """ddmin over the steps: remove chunks while the rest still fails; then try none at all."""
        n = 2
        while len(self.best.steps) >= 2 and not self.out_of_time():
            steps = list(self.best.steps)
            size = math.ceil(len(steps) / n)
            chunks = [steps[i:i + size] for i in range(0, len(steps), size)]
            for chunk in chunks:
                rest = [s for s in steps if s not in chunk]
                if self.accept_if_fails(self.best.with_steps(rest)):
                    n = max(n - 1, 2)
                    break
            else:
                if n >= len(steps):
                    break
                n = min(len(steps), n * 2)
        if self.best.steps and not self.out_of_time():
            self.accept_if_fails(self.best.with_steps([]))

    def timings(self) -> None:
        """Each step's window halved, and its start moved to an earlier whole second."""
        for i in range(len(self.best.steps)):
            for change in (self._shorter, self._earlier):
                if self.out_of_time() or i >= len(self.best.steps):
                    return
                step = change(self.best.steps[i])
                if step is not None:
                    self.accept_if_fails(self.best.with_steps(self.best.steps[:i] + (step,) + self.best.steps[i + 1:]))

    @staticmethod
    def _shorter(step: Any) -> Any:
        window = round(max(0.5, step.window_s / 2), 1)
        return replace(step, window_s=window) if window < step.window_s else None

    @staticmethod
    def _earlier(step: Any) -> Any:
        at = float(max(0, math.floor(step.at_s) - 1))
        return replace(step, at_s=at) if at < step.at_s else None

    def settings(self) -> None:
        """The topic's settings dropped (its defaults): all at once, else one at a time."""
        if not self.best.settings or self.accept_if_fails(replace(self.best, settings={})):
            return
        for name in sorted(self.best.settings):
            if self.out_of_time():
                return
            rest = {k: v for k, v in self.best.settings.items() if k != name}
            self.accept_if_fails(replace(self.best, settings=rest))

    def run(self) -> StepSchedule:
        began = len(self.finding.schedule.steps)
        for stage in (self.steps, self.timings, self.settings):
            stage()
        # the result replayed three times over, whatever the first two say: how often it fails
        self.best_replays = self.fails(self.best, every=True)
        self.write("shrunk", *(self.failing or ({},)))
        return self._done(began)

    def _done(self, began: int) -> StepSchedule:
        self.explorer.say(f"  shrunk {self.finding.check}: {began} -> {len(self.best.steps)} steps, "
                          f"{self.tries} replays; the result failed in {self.best_replays[0]} of "
                          f"{self.best_replays[1]} replays: "
                          f"{self.finding.folder}")
        return self.best


def shrink_finding(explorer: Any, pool: Any, finding: Any) -> None:
    shrinker = Shrinker(explorer, pool, finding, explorer.s.shrink_budget_s)
    finding.shrunk = shrinker.run()
    finding.replays = shrinker.best_replays
