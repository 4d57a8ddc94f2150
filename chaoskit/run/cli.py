"""`chaoskit run TEST_JSON`: run (or replay) one chaos test from its test.json.

Every run writes reports/runs/<id>/test.json; running it again with the same seed replays the same
workload and fault schedule. Options override the file's fields. A file written by another chaoskit
version is run with a warning (the same seed may then play differently). Exit 0 clean, 1 anomaly,
2 unknown, 3 a file or option it cannot use.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from chaoskit.run.options import add_broker_options, broker_changes, duration_arg


def register(sub: Any) -> None:
    from chaoskit.checkers.engine import ENGINES
    from chaoskit.cluster.spec import BACKENDS, PROFILES

    p = sub.add_parser("run", help="run or replay a chaos test from its test.json", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("test", type=Path, metavar="TEST_JSON", help="a test.json, or a run's folder (every run's "
                                                                "folder has one)")
    p.add_argument("--seed", type=int, help="override the seed")
    p.add_argument("--duration", type=duration_arg, help="override the duration: 90, 90s, 5m, 1h")
    p.add_argument("--profile", choices=PROFILES, help="override the profile")
    p.add_argument("--backend", choices=BACKENDS, help="override the backend")
    p.add_argument("--engine", choices=ENGINES, help="checker engine")
    add_broker_options(p)
    p.add_argument("--client", help="override the client (a registered client's name: `chaoskit plugins` lists them)")
    p.add_argument("--spark-master", help="Spark master URL for the checks")
    p.add_argument("--reports", type=Path, help="where runs/ goes")
    p.add_argument("--keep", action="store_true", help="leave the cluster up if the run is not clean")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run_command)


def read_test(path: Path) -> tuple[Any, dict[str, Any]]:
    """The ChaosTest in `path` (a test.json, or a run's folder holding one) and its JSON; UsageError
    (one line: what is wrong, what to do) for anything else."""
    from chaoskit.run.options import UsageError, unreadable
    from chaoskit.run.chaostest import TEST_FILE, ChaosTest

    if path.is_dir():
        if not (path / TEST_FILE).is_file():
            raise UsageError(f"{path} is a folder without a {TEST_FILE}; name a run's folder or its {TEST_FILE}")
        path = path / TEST_FILE
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise unreadable(path, e, TEST_FILE) from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not text; a test is a JSON file (every run's folder has its {TEST_FILE})") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        hint = " (this looks like a history, one op a line: `chaoskit check` reads those)" if "Extra data" in str(e) \
            else ""
        raise UsageError(f"{path} is not a JSON test: {e}{hint}") from None
    try:
        return ChaosTest.from_json(data), data
    except (ValueError, TypeError) as e:
        raise UsageError(f"{path}: {e}") from None


def runnable(test: Any) -> None:
    """ValueError for a test that could only fail once its cluster is up: no topic, a client,
    workload, check or fault no plugin adds, a fault schedule that cannot be drawn."""
    from chaoskit.pluginmanager import lookup, lookup_all
    from chaoskit.run.chaostest import schedule_for

    if not test.topics and test.workload == "keyed-sequences":
        raise ValueError('"topics" is empty; the keyed-sequences workload writes to at least one topic')
    lookup("clients", test.client)
    lookup("workloads", test.workload)
    lookup_all("checks", list(test.checks or []))
    schedule = schedule_for(test)  # None: no faults
    faults = lookup_all("faults", sorted({w.name for w in schedule.windows} if schedule else ()))
    on_broker(test, faults)


def on_broker(test: Any, faults: dict[str, Any]) -> None:
    """ValueError when the test's broker is unknown, not built here, lacks the storage engine asked
    for, or lacks what one of its faults needs."""
    from chaoskit.cluster import capabilities as caps
    from chaoskit.pluginmanager import broker_kind

    kind = broker_kind(test.broker)
    for name, factory in faults.items():
        why = kind.lacking(getattr(factory, "needs", ()), test.broker_storage)
        if why:
            raise ValueError(f"fault {name}: {why}")
    why = kind.refusal({caps.UNPATCHED} if test.profile != "patched" else (), test.backend, test.broker_storage)
    if why:
        raise ValueError(why)


def run_command(args: argparse.Namespace) -> int:
    from chaoskit.protocol.version import VERSION
    from chaoskit.run.options import UsageError
    from chaoskit.run.chaostest import VERSION_KEY, on_its_broker
    from chaoskit.run.runner import run

    test, data = read_test(args.test)
    overrides = {"seed": args.seed, "duration_s": args.duration, "profile": args.profile, "backend": args.backend,
                 "engine": args.engine, "spark_master": args.spark_master, "reports": args.reports,
                 "client": args.client, **broker_changes(args)}
    test = replace(test, **{k: v for k, v in overrides.items() if v is not None})
    test.replay = None  # the replay of this run is this run's own test.json
    try:
        test = on_its_broker(test)
        runnable(test)
    except ValueError as e:
        raise UsageError(f"{args.test}: {e}") from None
    written_by = data.get(VERSION_KEY)
    if written_by != VERSION:
        print(f"chaoskit run: warning: {args.test} was written by chaoskit {written_by or '(unknown version)'}, "
              f"this is {VERSION}: the replay may differ", file=sys.stderr)
    result = run(test, progress=sys.stderr.isatty(), keep=args.keep)
    if args.json:
        print(json.dumps(result.to_json(), indent=1, default=str))
    else:
        from chaoskit.reporting.terminal import print_results

        print_results([result], f"{test.name} ({test.profile}, seed {test.seed})")
    return {True: 0, False: 1}.get(result.valid, 2)
