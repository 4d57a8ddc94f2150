"""`chaoskit nightly`: loop the suites with fresh seeds and longer runs, keep every failing seed.

Each round runs `pytest SUITES -m chaos` in a child process with the round's seed (drawn from the
nightly's own seed, so a whole night replays from one number) and a longer `--chaos-duration`.
Every round writes into one Allure results directory; after each round the summary (runs,
anomalies by kind, seeds to replay) is rewritten atomically, so a crash of a broker, of a round's
runner or of the nightly itself loses nothing already summarised. A round that crashes counts as a
failed round with its exit code, and the loop goes on.

    reports/nightly/<id>/allure-results/   one Allure results directory for the whole night
    reports/nightly/<id>/rounds/<n>/       each round's runs (its --chaos-reports)
    reports/nightly/<id>/summary.json      and summary.md
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

from chaoskit.cluster.spec import new_run_id
from chaoskit.run.options import duration_arg
from chaoskit.roles import SEED_SPACE, new_seed
from chaoskit.run.files import write_atomically

GRACE_S = 120  # a round running at the deadline may finish its current runs for this long
CUT = "cut at the deadline"  # the exit recorded for a round stopped by the night's end (not a crash)


def seed_arg(text: str) -> int | None:
    if text == "random":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed is random or a whole number, got {text!r}") from None


def register(sub: Any) -> None:
    p = sub.add_parser("nightly", help="loop the chaos suites with fresh seeds; keep failing seeds",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=duration_arg, default=3600.0, help="how long to keep looping (default 1h)")
    p.add_argument("--suites", help="comma-separated suite names, e.g. kip253_expansion (default: every suite in "
                                    "--suites-dir)")
    p.add_argument("--suites-dir", type=Path, default=Path("suites"), help="where the suite files are (default "
                                                                            "suites/)")
    p.add_argument("--seed", type=seed_arg, default=None, help="random (default) or N: the night's seed")
    p.add_argument("--reports", type=Path, default=Path("reports"), help="where nightly/<id>/ goes")
    p.add_argument("--run-duration", type=duration_arg, default=None,
                   help="override each chaos test's duration (default: the tests' own; nightly ones are long)")
    p.add_argument("--marker", default="chaos", help="pytest -m expression (default chaos: smoke and nightly)")
    p.add_argument("--round-timeout", type=duration_arg, default=None,
                   help="kill a round after this long (default: what is left of --duration plus 2m, so the "
                        "night ends on time; the runs a cut round finished are kept)")
    p.add_argument("--matrix", action="store_true", help="first run the full conformance matrix (every client, "
                   "both profiles; `chaoskit matrix`) into the night's folder")
    p.add_argument("--mutations", action="store_true", help="first run every mutation against its suites "
                   "(`chaoskit mutate`) into the night's folder")
    p.add_argument("--job-seeds", type=int, default=3, help="seeds per cell for --matrix and --mutations (3)")
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    p.set_defaults(func=nightly_command)


def suite_files(args: argparse.Namespace) -> list[str]:
    """The suite files --suites names in --suites-dir (every one when it names none). A folder given
    to --suites, as it once took, is read as --suites-dir."""
    from chaoskit.run.options import UsageError, names

    if args.suites and Path(args.suites).is_dir():
        print(f"chaoskit nightly: --suites takes suite names; reading {args.suites} as --suites-dir", flush=True)
        args.suites_dir, args.suites = Path(args.suites), None
    known = sorted(p.stem.removeprefix("test_") for p in Path(args.suites_dir).glob("test_*.py"))
    chosen = names(args.suites, "--suites") if args.suites is not None else known
    missing = sorted(set(chosen) - set(known))
    if missing or not chosen:
        raise UsageError(f"no suite {', '.join(missing) or 'at all'} in {args.suites_dir}; "
                         f"the suites are {', '.join(known) or '(none)'}")
    return [str(Path(args.suites_dir) / f"test_{n}.py") for n in chosen]


def nightly_command(args: argparse.Namespace) -> int:
    args.suite_files = suite_files(args)
    night_seed = args.seed if args.seed is not None else new_seed()
    out = (args.reports / "nightly" / new_run_id()).resolve()
    night = Nightly(out, night_seed, args)
    suites = ", ".join(Path(f).stem.removeprefix("test_") for f in args.suite_files)
    print(f"chaoskit nightly: seed {night_seed}, {args.duration:g} s, suites {suites}, reports {out}", flush=True)
    night.jobs()
    night.loop()
    print(night.summary_text(), flush=True)
    return 0 if not night.summary["failing"] else 1


class Nightly:
    def __init__(self, out: Path, seed: int, args: argparse.Namespace) -> None:
        self.out, self.seed, self.args = out, seed, args
        self.rng = random.Random(seed)
        self.allure = out / "allure-results"
        self.summary: dict[str, Any] = {"seed": seed, "suites": args.suite_files, "started": time.strftime("%FT%T%z"),
                                        "rounds": [], "runs": 0, "anomalies": {}, "failing": [], "crashed_rounds": 0}

    def jobs(self) -> None:
        """The long jobs asked for (--matrix, --mutations), each a chaoskit command into the night's folder;
        their exit codes and how to re-run them go into the summary."""
        every = "kafka-python,librdkafka,aiokafka,ordered"
        suites = ",".join(Path(f).stem.removeprefix("test_") for f in self.args.suite_files)
        asked = {"matrix": ["matrix", f"--clients={every}", f"--suites={suites}", "--profiles=both"],
                 "mutations": ["mutate"]}
        for name, cmd in asked.items():
            if not getattr(self.args, name, False):
                continue
            self.out.mkdir(parents=True, exist_ok=True)
            full = [sys.executable, "-m", "chaoskit.cli", *cmd, f"--seeds={self.args.job_seeds}",
                    f"--seed={self.rng.randrange(SEED_SPACE)}", f"--out={self.out / name}"]
            with open(self.out / f"{name}.log", "wb") as log:
                code = subprocess.run(full, stdout=log, stderr=subprocess.STDOUT).returncode
            self.summary.setdefault("jobs", {})[name] = {"exit": code, "out": str(self.out / name),
                                                         "command": "chaoskit " + " ".join(full[3:])}
            self.write()

    def loop(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.args.duration
        n = 0
        while time.monotonic() < deadline:
            n += 1
            left = deadline - time.monotonic()
            self.round(n, self.rng.randrange(SEED_SPACE), self.args.round_timeout or left + GRACE_S)
            self.write()
        self.write()

    def round(self, n: int, seed: int, timeout: float) -> None:
        where = self.out / "rounds" / str(n)
        where.mkdir(parents=True, exist_ok=True)
        junit = where / "junit.xml"
        run_duration = [f"--chaos-duration={self.args.run_duration:g}"] if self.args.run_duration else []
        cmd = [sys.executable, "-m", "pytest", *self.args.suite_files, "-m", self.args.marker, f"--chaos-seed={seed}",
               *run_duration, f"--chaos-reports={where}",
               f"--alluredir={self.allure}", f"--junitxml={junit}", "-p", "no:cacheprovider", "-q",
               *self.args.pytest_args]
        began = time.monotonic()
        with open(where / "pytest.log", "wb") as log:
            try:
                code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout,
                                      env={**os.environ, "CHAOSKIT_ALLURE": "1"}).returncode
            except subprocess.TimeoutExpired:  # cut at the deadline: not a crash, its finished runs are kept
                code = CUT
        record = {"round": n, "seed": seed, "exit": code, "seconds": round(time.monotonic() - began, 1),
                  "tests": self.tests(junit), "log": str(where / "pytest.log")}
        if code not in (0, 1, CUT):  # pytest's own failure code is 1; anything else is a crash
            self.summary["crashed_rounds"] += 1
        self.summary["rounds"].append(record)
        runs = runs_of(where)
        for run in runs:
            self.summary["runs"] += 1
            anomalies = [name for name, r in run["verdict"]["results"].items() if r["valid"] is False]
            for a in anomalies:
                key = f"{run['profile']}:{a}"
                self.summary["anomalies"][key] = self.summary["anomalies"].get(key, 0) + 1
        if not record["tests"]:  # the round died before its JUnit file: judge its finished runs by their results
            for run in runs:
                if run["profile"] == "patched" and run["valid"] is not True:
                    self.summary["failing"].append({"round": n, "seed": seed, "test": run["name"],
                                                    "message": f"patched run {run['run_id']}: {run['valid']}",
                                                    "replay": run["replay"]})
        for t in record["tests"]:
            if t["outcome"] == "failed":
                self.summary["failing"].append({"round": n, "seed": seed, "test": t["name"],
                                                "message": t["message"][:500],
                                                "replay": replay_line(t["message"]) or
                                                f"pytest {t['name']} --chaos-seed={seed} {' '.join(duration_arg)}"
                                                .rstrip()})

    @staticmethod
    def tests(junit: Path) -> list[dict[str, str]]:
        """Each test's outcome from the round's JUnit XML (none if the round died before writing it)."""
        if not junit.exists():
            return []
        try:
            root = ET.parse(junit).getroot()
        except ET.ParseError:
            return []
        out = []
        for case in root.iter("testcase"):
            failure = case.find("failure") if case.find("failure") is not None else case.find("error")
            skipped = case.find("skipped") is not None
            name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
            out.append({"name": name, "outcome": "failed" if failure is not None else "skipped" if skipped else "passed",
                        "message": (failure.get("message", "") + "\n" + (failure.text or "")) if failure is not None else ""})
        return out

    def write(self) -> None:
        """summary.json and summary.md, each replaced atomically."""
        self.summary["updated"] = time.strftime("%FT%T%z")
        write_atomically(self.out / "summary.json", json.dumps(self.summary, indent=1) + "\n")
        write_atomically(self.out / "summary.md", self.summary_text())

    def summary_text(self) -> str:
        s = self.summary
        lines = [f"# chaoskit nightly (seed {s['seed']})", "",
                 f"rounds {len(s['rounds'])} ({s['crashed_rounds']} crashed), runs {s['runs']}, "
                 f"failing tests {len(s['failing'])}", "", "## anomalies by kind (profile:check -> runs)"]
        lines += [f"- {k}: {v}" for k, v in sorted(Counter(s["anomalies"]).items())] or ["- none"]
        lines += ["", "## seeds to replay"]
        lines += [f"- round {f['round']} seed {f['seed']}: `{f['replay']}`" for f in s["failing"]] or ["- none"]
        for name, job in s.get("jobs", {}).items():
            lines += ["", f"## {name}: exit {job['exit']}, report in {job['out']} (`{job['command']}`)"]
        lines += ["", f"Allure results: {self.allure}", ""]
        return "\n".join(lines)


def runs_of(where: Path) -> list[dict[str, Any]]:
    """The results.json of every run a round finished (a run that died mid-way has none)."""
    out = []
    for path in sorted((where / "runs").glob("*/results.json")):
        try:
            out.append(json.loads(path.read_text()))
        except ValueError:
            continue
    return out


def replay_line(message: str) -> str | None:
    for line in reversed(message.splitlines()):
        if line.strip().startswith("replay: "):
            return line.strip()[len("replay: "):]
    return None
