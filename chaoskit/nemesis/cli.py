"""`chaoskit schedule SPEC --seed N`: the fault schedule a spec and a seed give, byte for byte.

The same spec and seed always print the same windows, so a run's schedule can be looked at
before the run, compared between runs, or replayed: `--out DIR` writes it as the run directory's
nemesis-schedule.json. Fault names are checked against the installed fault packs.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("schedule", help="print the fault schedule a spec and a seed give (replayable)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", type=Path, help="the schedule spec, a JSON file (see docs/faults.md)")
    p.add_argument("--seed", type=int, required=True, help="the seed; the same seed gives the same schedule")
    p.add_argument("--out", type=Path, help="also write DIR/nemesis-schedule.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from chaoskit.run.options import UsageError
    from chaoskit.nemesis.schedule import ScheduleSpec, ScheduleSpecError, generate
    from chaoskit.pluginmanager import collect, get_plugin_manager

    try:
        data = json.loads(args.spec.read_text())
    except OSError as e:
        raise UsageError(f"cannot read the spec {args.spec}: {e.strerror}") from e
    except ValueError as e:
        raise UsageError(f"{args.spec} is not JSON: {e}") from e
    try:
        spec = ScheduleSpec.from_dict(data)
    except ScheduleSpecError as e:
        raise UsageError(f"{args.spec}: {e}") from e
    known = collect(get_plugin_manager(), "faults")
    unknown = sorted(n for n in spec.fault_names if n not in known)
    if unknown:
        raise UsageError(f"{args.spec}: no installed fault pack provides {', '.join(unknown)}; "
                         f"installed faults are {', '.join(sorted(known))}")
    schedule = generate(spec, args.seed)
    sys.stdout.write(schedule.to_json())
    if args.out is not None:
        print(f"wrote {schedule.write(args.out)}", file=sys.stderr)
    return 0
