"""The explore's folder, written as things arrive, so a killed explore loses no finding and
`--resume` carries on from it.

    reports/explore/<id>/
      explore.json            what was asked: the base test, seed, strategy, client, profile, mutations
      runs.jsonl              a line per run: schedule, parent, edits, verdict, findings, new coverage
      coverage.json           every feature reached, with the run that reached it first
      corpus/<hash>.json      each schedule kept (it reached something new), with its features
      findings/<check>-<hash>/
        test.json             the smallest failing schedule as a test: `chaoskit run` replays it
        schedule.txt          that schedule as a person reads it
        verdict.json          its verdict, with the witnesses
        replay.txt            the command that replays it, and how often it failed when replayed
        run/                  the failing run's folder (history, results, node logs: the witnesses' ops)
        found/                the same files for the schedule as first found, before shrinking
      runs/<run id>/          the runs' folders (those that added nothing are removed)

Every file is written whole and renamed into place.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit.explore.files import read_json, read_lines, write_atomically
from chaoskit.explore.steps import StepSchedule

SETTINGS_FILE, RUNS_FILE, COVERAGE_FILE = "explore.json", "runs.jsonl", "coverage.json"


@dataclass
class Entry:
    schedule: StepSchedule
    features: frozenset[str]
    run: int  # the run that added it
    chosen: int = 0  # times a parent so far


@dataclass
class Corpus:
    """What the search knows: the schedules kept, how often each feature was reached, the findings."""

    root: Path
    entries: dict[str, Entry] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)  # feature -> runs that reached it
    first: dict[str, int] = field(default_factory=dict)  # feature -> the run that reached it first
    runs: int = 0
    findings: dict[str, str] = field(default_factory=dict)  # check -> finding folder name
    timeline: list[tuple[float, int, int]] = field(default_factory=list)  # (seconds, runs, features)

    @classmethod
    def open(cls, root: Path, settings: dict[str, Any] | None = None) -> Corpus:
        """A new explore folder with its settings, or (settings None) the one at `root` read back."""
        root = Path(root)
        corpus = cls(root)
        if settings is not None:
            if (root / SETTINGS_FILE).exists():
                raise FileExistsError(f"{root} already holds an explore; resume it with --resume {root}")
            write_atomically(root / SETTINGS_FILE, json.dumps(settings, indent=1) + "\n")
            return corpus
        if not (root / SETTINGS_FILE).exists():
            raise FileNotFoundError(f"{root} holds no explore ({SETTINGS_FILE} is missing)")
        for path in sorted((root / "corpus").glob("*.json")):
            data = json.loads(path.read_text())
            corpus.entries[path.stem] = Entry(StepSchedule.from_json(data["schedule"]), frozenset(data["features"]),
                                              data["run"])
        for line in read_lines(root / RUNS_FILE):
            corpus.runs = max(corpus.runs, line["n"] + 1)
            for f in line.get("features", ()):
                corpus.hits[f] = corpus.hits.get(f, 0) + 1
            for check in set(line.get("findings", ())) - set(line.get("unmutated", ())):
                corpus.findings.setdefault(check, f"{check}-{line['schedule']}")
            corpus.timeline.append((line.get("at_s", 0.0), line["n"] + 1, line.get("total", 0)))
        corpus.first = {k: int(v) for k, v in read_json(root / COVERAGE_FILE).items()}
        return corpus

    @property
    def settings(self) -> dict[str, Any]:
        return read_json(self.root / SETTINGS_FILE)

    @property
    def coverage(self) -> int:
        return len(self.first)

    def note(self, line: dict[str, Any], schedule: StepSchedule, features: frozenset[str]) -> list[str]:
        """Record a run (its line gets `new` and `total`); keep its schedule if it reached something
        new. Returns the new features."""
        new = sorted(features - self.first.keys())
        for f in features:
            self.hits[f] = self.hits.get(f, 0) + 1
        for f in new:
            self.first[f] = line["n"]
        self.runs = max(self.runs, line["n"] + 1)
        if new and schedule.digest not in self.entries:
            self.entries[schedule.digest] = Entry(schedule, features, line["n"])
            write_atomically(self.root / "corpus" / f"{schedule.digest}.json",
                             json.dumps({"schedule": schedule.to_json(), "features": sorted(features),
                                         "run": line["n"]}, indent=1) + "\n")
        if new:
            write_atomically(self.root / COVERAGE_FILE, json.dumps(self.first, indent=0, sort_keys=True) + "\n")
        line.update(schedule=schedule.digest, new=new, total=self.coverage, features=sorted(features))
        self.timeline.append((line.get("at_s", 0.0), self.runs, self.coverage))
        with (self.root / RUNS_FILE).open("a") as f:
            f.write(json.dumps(line) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return new

    def rarity(self, entry: Entry) -> float:
        """How much an entry is worth mutating: the rarer its features, the more (FairFuzz's idea),
        less each time it was chosen."""
        return sum(1.0 / self.hits.get(f, 1) for f in entry.features) / (1.0 + 0.3 * entry.chosen)

    def finding_dir(self, check: str, schedule: StepSchedule) -> Path:
        return self.root / "findings" / f"{check}-{schedule.digest}"

    def drop_run(self, run_dir: Path) -> None:
        """A run that added nothing: its folder goes (its line in runs.jsonl stays)."""
        shutil.rmtree(run_dir, ignore_errors=True)
