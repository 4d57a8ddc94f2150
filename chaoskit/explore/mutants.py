"""`chaoskit mutate --explore BUDGET`: the search proved by mutation. For each mutation (one element
of the proposals turned off, chaoskit.protocol.mutations) and seed, an explore from the default base
with the mutation on, until its first finding or the budget. Caught: it found an anomaly; the table
gives how soon, and how small the shrunk schedule is and how often it failed when replayed. A
finding the same test shows without the mutation too is the system's own, not a catch: the search
goes on, and the table counts those apart."""
from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from chaoskit.explore.search import Explorer, Settings, parse_budget
from chaoskit.explore.steps import default_base
from chaoskit.protocol.mutations import MUTATIONS
from chaoskit.roles import cell_seeds
from chaoskit.run.files import write_atomically


def explore_mutations(names: list[str], args: argparse.Namespace) -> int:
    unknown = sorted(set(names) - set(MUTATIONS))
    if unknown:
        raise ValueError(f"no mutation named {', '.join(unknown)}; they are {', '.join(MUTATIONS)}")
    budget = parse_budget(args.explore)
    seed, seeds = cell_seeds(args.seed, args.seeds)
    out = (args.out or args.reports / "mutations").resolve()
    print(f"chaoskit mutate --explore: seed {seed} ({', '.join(map(str, seeds))}), {len(names)} mutations, "
          f"{budget:g} s each, {args.strategy} search, {args.client} client, {args.duration:g} s runs, out {out}",
          flush=True)
    table: dict[str, Any] = {"seed": seed, "seeds": seeds, "budget_s": budget, "strategy": args.strategy,
                             "client": args.client, "duration_s": args.duration, "mutations": {}}
    for name in names:
        runs = []
        for s in seeds:
            one = explore_one(name, s, budget, out / "explore" / name / str(s), args)
            runs.append(one)
            print(f"  {name} seed {s}: {one['outcome']}" + (f" after {one['first_s']:.0f} s ({one['runs']} runs), "
                  f"shrunk to {one['steps']} steps" if one["outcome"] == "caught" else f" ({one['runs']} runs)"),
                  flush=True)
        table["mutations"][name] = {"proposal": MUTATIONS[name].proposal, "runs": runs}
        write_atomically(out / "mutations-explore.json", json.dumps(table, indent=1) + "\n")
        write_atomically(out / "mutations-explore.md", markdown(table))
    print(markdown(table))
    return 0 if all(r["outcome"] == "caught" for m in table["mutations"].values() for r in m["runs"]) else 1


def explore_one(mutation: str, seed: int, budget_s: float, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    base = replace(default_base(args.client, duration_s=args.duration), mutations=[mutation])
    settings = Settings(base, out, seed, budget_s, args.strategy, "anomaly", args.jobs, shrink=True,
                        shrink_budget_s=parse_budget(args.shrink_budget))
    quiet = lambda line: print(line, flush=True) if line.startswith("  FINDING") else None  # noqa: E731
    result = Explorer(settings, quiet, resume=(out / "explore.json").exists()).run()
    found = result.findings[0] if result.findings else None
    return {"seed": seed, "outcome": "caught" if found else "missed", "runs": result.runs,
            "unmutated": [f"{f.check}: {f.folder}" for f in result.unmutated],
            "flaky": [f"{f.check}: {f.folder}" for f in result.flaky],
            "first_s": found.at_s if found else None, "check": found.check if found else None,
            "steps": len(found.shrunk.steps) if found and found.shrunk else None,
            "replays": list(found.replays) if found and found.replays else None,
            "folder": str(found.folder) if found else str(out)}


def markdown(table: dict[str, Any]) -> str:
    lines = ["| mutation | proposal | caught | first catch (median) | check | shrunk steps | replays failed | "
             "found without it |", "|---|---|---|---|---|---|---|---|"]
    for name, m in table["mutations"].items():
        caught = [r for r in m["runs"] if r["outcome"] == "caught"]
        median = f"{statistics.median(r['first_s'] for r in caught):.0f} s" if caught else "-"
        checks = ", ".join(sorted({r["check"] for r in caught})) or "-"
        steps = ", ".join(str(r["steps"]) for r in caught) or "-"
        replays = ", ".join(f"{r['replays'][0]}/{r['replays'][1]}" for r in caught if r["replays"]) or "-"
        own = sum(len(r.get("unmutated", ())) for r in m["runs"])
        lines.append(f"| {name} | {m['proposal']} | {len(caught)} of {len(m['runs'])} | {median} | {checks} | "
                     f"{steps} | {replays} | {own} |")
    return ("\n".join(lines) + "\n\nfound without it: anomalies the search met that the system shows with the "
            "mutation off too (a finding of the system itself, kept in the explore's findings/, not a catch)\n")
