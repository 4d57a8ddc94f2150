"""`chaoskit explore SUITE_OR_TEST_JSON`: search schedules of admin changes, faults and client moves
for one that breaks a guarantee, guided by the protocol states runs reach; shrink what it finds.

    chaoskit explore kip253_expansion --budget 10m --seed 7          a suite's smoke test as the base
    chaoskit explore reports/runs/<id>/test.json --client kafka-python
    chaoskit explore kip694_reduction --mutation readonly-refusal    does the search catch it?
    chaoskit explore --resume reports/explore/<id> --budget 5m       carry on where it stopped
    chaoskit explore --budget 10m                                    the default base: one topic, a group of three

The base gives the cluster, topics, workload and client; its own fault windows are the first
schedule tried. Everything goes to reports/explore/<id>/ as it arrives (docs/explore.md): the
corpus, a line per run, and each finding's folder with its smallest failing schedule and the
command that replays it. Exit 0 when nothing was found, 1 on a finding, 3 on bad input.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from chaoskit.cluster.brokers import DEFAULT as DEFAULT_BROKER
from chaoskit.run.chaostest import on_its_broker
from chaoskit.run.options import add_broker_options, broker_changes, duration_arg
from chaoskit.explore.search import STRATEGIES, UNTIL, Explorer, Settings, parse_budget
from chaoskit.explore.steps import default_base
from chaoskit.run.cli import read_test, runnable


FOREIGN_CLIENT = "kafka-python"  # the client on a broker without the proposals, unless one is asked for


def register(sub: Any) -> None:
    from chaoskit.cluster.spec import BACKENDS, PROFILES

    p = sub.add_parser("explore", help="search fault schedules for one that breaks a guarantee; shrink it",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", nargs="?", help="a suite (kip253_expansion, or suites/test_x.py[::test]) or a test.json "
                                           "(default: one topic, three producers, a group of three, 10 s runs)")
    p.add_argument("--budget", default="10m", help="how long to search: 90s, 10m, 1h (default 10m)")
    p.add_argument("--seed", type=int, help="the search's seed (default: drawn and printed)")
    p.add_argument("--client", help="the client every run uses (default: the base's)")
    p.add_argument("--profile", choices=PROFILES, help="patched or unpatched (default: the base's; a suite: patched)")
    p.add_argument("--backend", choices=BACKENDS, help="local or docker (default: the base's)")
    p.add_argument("--duration", type=duration_arg, help="workload and faults per run: 10, 10s, 1m (default: the "
                                                      "base's)")
    add_broker_options(p)
    p.add_argument("--mutation", help="run every schedule with these elements turned off (comma-separated)")
    p.add_argument("--strategy", choices=STRATEGIES, default="coverage",
                   help="coverage (keep and edit schedules that reached new states) or random (each drawn afresh)")
    p.add_argument("--until", choices=UNTIL, default="anomaly", help="stop at the first finding (anomaly) or run "
                                                                     "the whole budget")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="runs at once, each on a cluster of its own (default: 2, or 1 on a one-core machine)")
    p.add_argument("--faults", help="only these faults in the grammar (comma-separated; default: every installed one)")
    p.add_argument("--no-shrink", action="store_true", help="keep findings as found")
    p.add_argument("--shrink-budget", default="10m", help="how long shrinking a finding may take (default 10m)")
    p.add_argument("--reports", type=Path, default=Path("reports"), help="where every command's output goes "
                                                                          "(default reports/): explore/<id>/ here")
    p.add_argument("--out", type=Path, help="the explore's own folder (default <reports>/explore/<id>)")
    p.add_argument("--resume", type=Path, metavar="DIR", help="carry on an explore from its folder")
    p.add_argument("--keep-runs", action="store_true", help="keep every run's folder, not only those that added "
                                                             "coverage or found something")
    p.add_argument("--json", action="store_true", help="print the result as JSON at the end")
    p.set_defaults(func=explore_command)


def explore_command(args: argparse.Namespace) -> int:
    from chaoskit.run.options import UsageError

    try:
        settings, resume = settings_from(args)
        explorer = Explorer(settings, resume=resume)
    except (ValueError, OSError, KeyError, TypeError) as e:
        raise UsageError(str(e).splitlines()[0] if str(e) else type(e).__name__) from e
    result = explorer.run()
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    for f in result.findings:
        print(f"finding {f.check}: {f.folder}\n  replay: chaoskit run {f.folder / 'test.json'}")
    return 1 if result.findings else 0


def settings_from(args: argparse.Namespace) -> tuple[Settings, bool]:
    from chaoskit.cluster.spec import new_run_id
    from chaoskit.protocol.mutations import checked
    from chaoskit.roles import new_seed

    budget = parse_budget(args.budget)
    shrink_budget = parse_budget(args.shrink_budget)
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    if args.resume is not None:
        from chaoskit.explore.corpus import Corpus

        saved = Corpus.open(args.resume).settings
        settings = Settings.from_json(saved, args.resume)
        return replace(settings, budget_s=budget, shrink_budget_s=shrink_budget, jobs=args.jobs), True
    out = args.out or args.reports / "explore" / new_run_id()
    base = base_test(args.base, args.profile or "patched") if args.base else default_base()
    mutations = sorted(checked(m.strip() for m in args.mutation.split(","))) if args.mutation else base.mutations
    changes = {"client": args.client, "profile": args.profile, "backend": args.backend, "duration_s": args.duration,
               **broker_changes(args)}
    base = replace(base, mutations=list(mutations), **{k: v for k, v in changes.items() if v is not None})
    if base.broker != DEFAULT_BROKER and args.client is None and base.client == "ordered":
        base = replace(base, client=FOREIGN_CLIENT)  # the ordered client's gates need KIP-253: a stock one
    try:
        base = on_its_broker(base)
        runnable(base)
    except ValueError as e:
        raise ValueError(f"{args.base or 'the default base'}: {e}") from None
    seed = args.seed if args.seed is not None else new_seed()
    faults = [f.strip() for f in args.faults.split(",")] if args.faults else None
    return Settings(base, out, seed, budget, args.strategy, args.until, args.jobs, not args.no_shrink,
                    shrink_budget, faults, args.keep_runs), False


def base_test(text: str, profile: str) -> Any:
    """The base ChaosTest: a test.json, or a suite's first smoke test as pytest would run it."""
    path = Path(text)
    if path.suffix == ".json":
        return read_test(path)[0]
    return suite_test(text, profile)


def suite_test(text: str, profile: str) -> Any:
    """A suite's smoke test as data: pytest collects it with --chaos-dry-run (nothing runs)."""
    from chaoskit.run.chaostest import TEST_FILE, ChaosTest
    from chaoskit.suite.cells import SMOKE, SUITES

    node = text if "/" in text or text.endswith(".py") or "::" in text else str(SUITES / f"test_{text}.py")
    file = node.split("::")[0]
    if not Path(file).is_file():
        known = ", ".join(sorted(p.stem.removeprefix("test_") for p in SUITES.glob("test_*.py")))
        raise ValueError(f"no suite {text!r}: give one of {known or '(none here)'}, a suite file or a test.json")
    with tempfile.TemporaryDirectory(prefix="chaoskit-explore-") as tmp:
        cmd = [sys.executable, "-m", "pytest", node, "-m", SMOKE, "-q", "--chaos-dry-run", f"--chaos-profile={profile}",
               "--chaos-seed=0", f"--chaos-reports={tmp}", "-p", "no:cacheprovider", "-p", "no:allure_pytest"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        found = sorted(Path(tmp).glob(f"dry-run/*/{TEST_FILE}"))
        if not found:
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            raise ValueError(f"{node}: no smoke test collected ({' / '.join(tail)})")
        return ChaosTest.from_json(json.loads(found[0].read_text()))
