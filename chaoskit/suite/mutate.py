"""`chaoskit mutate`: prove each suite catches what it exists for, one element turned off at a time.

For each mutation (chaoskit.protocol.mutations: one element of a proposal turned off in an
otherwise patched system) and each suite expected to catch it, the suite's smoke test runs on the
patched profile with that mutation, once per seed, in a child pytest. A run is *caught* when its
verdict found an anomaly, *missed* when it checked clean, *unknown* otherwise. The table, and
`mutations.json` with every run's verdict, seed and replay command, go to the output folder;
docs/verdicts.md keeps the measured table and names the gaps (mutations no suite catches in 95 %
of seeds). Exit 0 when every mutation run was caught by a suite in at least 95 % of its seeds, 1
when one was not, 3 on bad input.

    chaoskit mutate                                   every mutation, its suites, 3 seeds
    chaoskit mutate --mutations guardrail --seeds 1   one of them
    chaoskit mutate --suites kip253_expansion --all   every mutation against one suite
    chaoskit mutate --nightly                         each suite's nightly cases as well as its CI ones
    chaoskit mutate --explore 10m --seeds 3           the search instead of the suites: is each caught, how soon

With `--explore BUDGET` no suite runs: for each mutation and seed, `chaoskit explore` searches from
its default base (one topic, a group of three, no fault of its own) with the mutation on, until its
first finding or the budget; the mutation is caught when it found an anomaly. The table gives the
time to the first catch and the shrunk schedule's steps (mutations-explore.json and .md).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from chaoskit.run.options import duration_arg
from chaoskit.protocol.mutations import MUTATIONS
from chaoskit.suite.cells import SMOKE, SUITES, WITH_NIGHTLY, run_cell
from chaoskit.roles import cell_seeds
from chaoskit.run.files import write_atomically

GOAL = 0.95  # the share of seeds in which some suite must catch each mutation


def register(sub: Any) -> None:
    p = sub.add_parser("mutate", help="run suites with one element of the proposals turned off; caught or not",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mutations", help=f"comma-separated (default all): {', '.join(MUTATIONS)}")
    p.add_argument("--suites", help="comma-separated suite names, e.g. kip253_expansion (default: each "
                                    "mutation's own suites)")
    p.add_argument("--all", action="store_true", help="run each mutation against every suite asked for, not only "
                                                     "the suites expected to catch it")
    p.add_argument("--nightly", action="store_true", help="run each suite's nightly cases as well as its CI "
                                                         "smoke cases (a gap a nightly story closes counts)")
    p.add_argument("--seeds", type=int, default=3, help="seeds per mutation and suite (default 3)")
    p.add_argument("--seed", type=int, help="the seed the runs' seeds are drawn from (default: drawn, printed)")
    p.add_argument("--reports", type=Path, default=Path("reports"), help="where every command's output goes "
                                                                          "(default reports/): mutations/ here")
    p.add_argument("--out", type=Path, default=None,
                   help="the own folder of mutations.json, mutations.md and the runs (default <reports>/mutations)")
    p.add_argument("--suites-dir", type=Path, default=SUITES, help="where the suite files are (default suites/)")
    p.add_argument("--explore", metavar="BUDGET", help="search with chaoskit explore for this long per mutation and "
                                                       "seed instead of running the suites (e.g. 10m)")
    p.add_argument("--client", default="ordered", help="with --explore: the client (default ordered)")
    p.add_argument("--jobs", type=int, default=2, help="with --explore: runs at once, a cluster each (default 2)")
    p.add_argument("--strategy", default="coverage", help="with --explore: coverage or random (default coverage)")
    p.add_argument("--shrink-budget", default="10m", help="with --explore: how long shrinking a catch may take")
    p.add_argument("--duration", type=duration_arg, default=15.0, help="with --explore: seconds of each run (default 15: "
                                                                "room for the staged stories' waits)")
    p.set_defaults(func=mutate_command)


def plan(mutations: list[str], suites: list[str] | None, every_suite: bool, suites_dir: Path) -> list[tuple[str, str]]:
    """(mutation, suite) pairs to run."""
    known = sorted(p.stem.removeprefix("test_") for p in suites_dir.glob("test_*.py"))
    asked = suites or known
    bad = sorted(set(asked) - set(known)) + sorted(set(mutations) - set(MUTATIONS))
    if bad:
        raise ValueError(f"unknown: {', '.join(bad)}; the suites are {', '.join(known)}, "
                         f"the mutations {', '.join(MUTATIONS)}")
    return [(m, s) for m in mutations for s in asked if every_suite or s in MUTATIONS[m].suites]


def run_one(mutation: str, suite: str, seed: int, out: Path, suites_dir: Path = SUITES,
            nightly: bool = False) -> dict[str, Any]:
    """The suite's smoke tests (and its nightly ones) on the patched profile with `mutation`:
    caught, missed or unknown."""
    cell = run_cell(suite, out / mutation / suite / str(seed), seed=seed, mutation=mutation, suites_dir=suites_dir,
                    marks=WITH_NIGHTLY if nightly else SMOKE)
    return {**cell, "outcome": {"clean": "missed"}.get(cell["outcome"], cell["outcome"])}


def mutate_command(args: argparse.Namespace) -> int:
    from chaoskit.run.options import UsageError
    from chaoskit.run.options import names as names_of

    chosen = names_of(args.mutations, "--mutations") if args.mutations is not None else list(MUTATIONS)
    if args.explore:
        from chaoskit.explore.mutants import explore_mutations

        try:
            return explore_mutations(chosen, args)
        except ValueError as e:
            raise UsageError(str(e)) from e
    suites = names_of(args.suites, "--suites") if args.suites is not None else None
    try:
        pairs = plan(chosen, suites, args.all, args.suites_dir)
    except ValueError as e:
        raise UsageError(str(e)) from e
    seed, seeds = cell_seeds(args.seed, args.seeds)
    out = (args.out or args.reports / "mutations").resolve()
    print(f"chaoskit mutate: seed {seed} ({', '.join(map(str, seeds))}), {len(pairs)} mutation x suite pairs, "
          f"out {out}", flush=True)
    table: dict[str, Any] = {"seed": seed, "seeds": seeds, "goal": GOAL, "nightly": args.nightly, "mutations": {}}
    for mutation, suite in pairs:
        m = MUTATIONS[mutation]
        entry = table["mutations"].setdefault(mutation, {"proposal": m.proposal, "element": m.element,
                                                          "part": m.part, "suites": {}})
        results = []
        for s in seeds:
            one = run_one(mutation, suite, s, out, args.suites_dir, args.nightly)
            results.append(one)
            print(f"  {mutation} x {suite} seed {s}: {one['outcome']} ({one['seconds']:g} s)", flush=True)
        entry["suites"][suite] = summary(results)
        write(table, out)
    print(markdown(table))
    return 0 if not gaps(table) else 1


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {k: sum(1 for r in results if r["outcome"] == k) for k in ("caught", "missed", "unknown")}
    return {**counts, "of": len(results), "runs": results}


def caught_share(entry: dict[str, Any], seeds: list[int]) -> float:
    """The share of seeds in which at least one suite caught the mutation."""
    caught = {r["seed"] for s in entry["suites"].values() for r in s["runs"] if r["outcome"] == "caught"}
    return len(caught & set(seeds)) / len(seeds) if seeds else 0.0


def gaps(table: dict[str, Any]) -> list[str]:
    return [m for m, e in table["mutations"].items() if caught_share(e, table["seeds"]) < table["goal"]]


def markdown(table: dict[str, Any]) -> str:
    lines = ["| mutation | proposal | suite | caught | missed | unknown |", "|---|---|---|---|---|---|"]
    for name, e in table["mutations"].items():
        for suite, s in e["suites"].items():
            lines.append(f"| {name} | {e['proposal']} | {suite} | {s['caught']} of {s['of']} | {s['missed']} | "
                         f"{s['unknown']} |")
    missing = gaps(table)
    lines += ["", f"gaps (caught in under {table['goal']:.0%} of seeds): {', '.join(missing) or 'none'}"]
    return "\n".join(lines)


def write(table: dict[str, Any], out: Path) -> None:
    """mutations.json and mutations.md, each replaced whole (a crash mid-way keeps the last pairs)."""
    write_atomically(out / "mutations.json", json.dumps(table, indent=1) + "\n")
    write_atomically(out / "mutations.md", markdown(table))
