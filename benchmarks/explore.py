"""The search's figures: how many 10 s schedules a minute it runs, and what coverage guidance buys.

Two parts (either or both):
- `--rate`: one 10 s schedule (an expansion, a broker killed, latency on the clients) run `--runs`
  times each way: a fresh cluster per run (`chaoskit run`'s way), one kept cluster (a lane), and
  `--jobs` lanes at once. Prints each way's schedules per minute and its ratio to fresh clusters.
- `--broker NAME`: one 10 s schedule any broker can take (a broker killed, latency on the clients),
  `--runs` times on chaoskit's own broker and on NAME (tansu: one broker over SQLite), each run on a
  cluster of its own, with kafka-python; prints each one's schedules per minute and their ratio.
- `--race` (or `--mutations a,b,c`): for each mutation and each of `--seeds` seeds, an explore with the mutation on
  from the default base, coverage-guided and plain random (each schedule drawn afresh from the same
  grammar), for `--budget` each, until the first catch. Prints each one's time to the first catch
  and its coverage, the median over the seeds, and the ratio random / guided; writes the coverage
  of every explore over time as coverage.png and the figures as explore-bench.json in `--out`.
  `--race` races the three mutations the suites used to miss (position-exchange, offline-replica-isr,
  readonly-refusal): up to 3 h with the defaults.
- `--coverage`: for each of `--seeds` seeds, an explore of the default base without mutations for the
  whole `--budget`, coverage-guided and plain random; prints the features each reached, their median
  and the ratio guided / random (a race's coverage is cut short at its first catch, and while a
  finding is confirmed no run adds any, so states reached are compared here, over the same budget).
Without any of them, `--rate` alone (what `make bench` runs).

Usage: python benchmarks/explore.py [--rate] [--runs 6] [--jobs 2] [--broker tansu] [--coverage]
                                    [--race | --mutations M,...] [--seeds 3] [--seed 1] [--budget 10m] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from chaoskit.cluster.spec import new_run_id
from chaoskit.explore.lanes import Lane
from chaoskit.explore.pool import LanePool
from chaoskit.explore.search import Explorer, Settings, parse_budget
from chaoskit.explore.steps import Step, StepSchedule, default_base, to_test
from chaoskit.run.runner import run
from chaoskit.roles import cell_seeds

HARDEST = ("position-exchange", "offline-replica-isr", "readonly-refusal")
TEN_SECONDS = StepSchedule((Step("admin", 2.0, 0.5, "client", {"op": "expand", "topic": "orders", "to": 6}, pick=1),
                            Step("kill", 4.0, 2.0, "random-broker", pick=2),
                            Step("latency", 6.0, 2.0, "client", {"latency": 50}, pick=3)))


GENERIC = StepSchedule((Step("kill", 3.0, 2.0, "random-broker", pick=2),
                        Step("latency", 6.0, 2.0, "client", {"latency": 50}, pick=3)))


def broker_rate(broker: str, runs: int, out: Path) -> dict[str, float]:
    """Schedules per minute of one generic 10 s schedule on chaoskit's broker and on `broker`."""
    from chaoskit.run.chaostest import on_its_broker

    figures = {}
    for name in ("chaoskit", broker):
        base = on_its_broker(replace(default_base("kafka-python", duration_s=10.0), reports=out, broker=name))
        began = time.monotonic()
        for i in range(runs):
            run(to_test(base, GENERIC, f"rate-{name}-{i}", seed=i, suffix=f"-{name}{i}"))
        figures[name] = runs / (time.monotonic() - began) * 60
    return figures


def rate(runs: int, jobs: int, out: Path) -> dict[str, float]:
    """Schedules per minute: fresh clusters, one kept cluster, `jobs` kept clusters at once."""
    base = replace(default_base(duration_s=10.0), reports=out)
    tests = [to_test(base, TEN_SECONDS, f"rate-{i}", seed=i, suffix=f"-r{i}") for i in range(runs)]
    figures = {}
    began = time.monotonic()
    for t in tests:
        run(t)
    figures["fresh clusters"] = runs / (time.monotonic() - began) * 60
    lane = Lane(out / "lanes")
    began = time.monotonic()
    try:
        for t in tests:
            run(replace(t, name=f"{t.name}-kept"), lane=lane)
    finally:
        lane.close()
    figures["one kept cluster"] = runs / (time.monotonic() - began) * 60
    pool = LanePool(out / "pool", jobs)
    began = time.monotonic()
    try:
        for future in [pool.submit(replace(t, name=f"{t.name}-pool")) for t in tests * jobs]:
            future.result()
    finally:
        pool.close()
    figures[f"{jobs} kept clusters at once"] = runs * jobs / (time.monotonic() - began) * 60
    return figures


def race(mutation: str | None, seed: int, strategy: str, budget_s: float, jobs: int, out: Path) -> dict[str, Any]:
    """One explore from the default base: with `mutation` on until its first catch, else (None) for
    the whole budget."""
    base = replace(default_base(), mutations=[mutation] if mutation else [], reports=out)
    settings = Settings(base, out / (mutation or "none") / strategy / str(seed), seed, budget_s, strategy,
                        "anomaly" if mutation else "budget", jobs, shrink=False)
    result = Explorer(settings, lambda _: None).run()
    return {"mutation": mutation, "seed": seed, "strategy": strategy, "caught_s": result.first_finding_s,
            "runs": result.runs, "coverage": result.coverage, "timeline": result.timeline,
            "check": result.findings[0].check if result.findings else None}


def reached(seed: int, seeds: int, budget_s: float, jobs: int, out: Path) -> list[dict[str, Any]]:
    """Features reached in the whole budget by each strategy, for each seed, without mutations."""
    _, drawn = cell_seeds(seed, seeds)
    rows = []
    for s in drawn:
        for strategy in ("coverage", "random"):
            r = race(None, s, strategy, budget_s, jobs, out)
            rows.append(r)
            print(f"coverage: seed {s} {strategy}: {r['coverage']} features in {r['runs']} runs", flush=True)
    medians = {strategy: statistics.median(r["coverage"] for r in rows if r["strategy"] == strategy)
               for strategy in ("coverage", "random")}
    print(f"median features reached in {budget_s:.0f} s: guided {medians['coverage']:.0f}, random "
          f"{medians['random']:.0f} (guided / random {medians['coverage'] / max(medians['random'], 1):.2f}x)")
    return rows


def plot(races: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mutations = sorted({r["mutation"] for r in races})
    fig, axes = plt.subplots(1, len(mutations), figsize=(5 * len(mutations), 4), squeeze=False)
    for ax, mutation in zip(axes[0], mutations):
        for r in (r for r in races if r["mutation"] == mutation):
            xs = [0.0] + [t for t, _, _ in r["timeline"]]
            ys = [0] + [c for _, _, c in r["timeline"]]
            ax.step(xs, ys, where="post", color="tab:blue" if r["strategy"] == "coverage" else "tab:orange",
                    label=f"{r['strategy']} seed {r['seed']}", alpha=0.8)
            if r["caught_s"] is not None:
                ax.axvline(r["caught_s"], color="tab:blue" if r["strategy"] == "coverage" else "tab:orange",
                           linestyle=":", alpha=0.6)
        ax.set_title(f"{mutation} (dotted: caught)" if mutation else "no mutation, the whole budget")
        ax.set_xlabel("seconds")
        ax.set_ylabel("features reached")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", action="store_true", help="measure schedules per minute")
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--broker", help="compare schedules per minute on chaoskit's broker and on this one (tansu)")
    p.add_argument("--race", action="store_true", help=f"race guided and random search on {', '.join(HARDEST)}")
    p.add_argument("--mutations", help="race on these mutations instead (comma-separated)")
    p.add_argument("--coverage", action="store_true", help="compare the states guided and random search reach "
                   "in the budget, without mutations")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--budget", default="10m")
    p.add_argument("--out", type=Path, default=Path("reports") / "bench" / f"explore-{new_run_id()}")
    args = p.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {"measured": time.strftime("%Y-%m-%d %H:%M"), "jobs": args.jobs}
    names = args.mutations.split(",") if args.mutations else list(HARDEST) if args.race else []
    if args.broker:
        figures["brokers"] = broker_rate(args.broker, args.runs, out / "brokers")
        own = figures["brokers"]["chaoskit"]
        for name, per_minute in figures["brokers"].items():
            print(f"broker {name}: {per_minute:.1f} schedules/min ({per_minute / own:.2f}x chaoskit's)", flush=True)
    if args.coverage:
        figures["coverage"] = reached(args.seed, args.seeds, parse_budget(args.budget), args.jobs, out / "coverage")
    if args.rate or not (names or args.broker or args.coverage):
        figures["rate"] = rate(args.runs, args.jobs, out / "rate")
        fresh = figures["rate"]["fresh clusters"]
        for way, per_minute in figures["rate"].items():
            print(f"rate: {way}: {per_minute:.1f} schedules/min ({per_minute / fresh:.2f}x fresh)", flush=True)
    budget = parse_budget(args.budget)
    _, seeds = cell_seeds(args.seed, args.seeds)
    races = figures["races"] = []
    for mutation in names:
        for seed in seeds:
            for strategy in ("coverage", "random"):
                r = race(mutation, seed, strategy, budget, args.jobs, out / "races")
                races.append(r)
                caught = f"caught after {r['caught_s']:.0f} s ({r['check']})" if r["caught_s"] is not None else "missed"
                print(f"race: {mutation} seed {seed} {strategy}: {caught}, {r['runs']} runs, coverage {r['coverage']}",
                      flush=True)
                (out / "explore-bench.json").write_text(json.dumps(figures, indent=1) + "\n")
    for mutation in names:
        medians = {}
        for strategy in ("coverage", "random"):
            times = [r["caught_s"] if r["caught_s"] is not None else budget * 2 for r in races
                     if r["mutation"] == mutation and r["strategy"] == strategy]  # a miss counts as twice the budget
            medians[strategy] = statistics.median(times)
        ratio = medians["random"] / medians["coverage"] if medians["coverage"] else float("inf")
        print(f"median time to catch {mutation}: guided {medians['coverage']:.0f} s, random {medians['random']:.0f} s "
              f"(random / guided {ratio:.1f}x; a miss counts as {2 * budget:.0f} s)")
    for rows, name in ((races, "coverage.png"), (figures.get("coverage"), "coverage-reached.png")):
        if rows:
            plot(rows, out / name)
            print(f"coverage over time: {out / name}")
    (out / "explore-bench.json").write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
