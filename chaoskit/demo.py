"""`make demo`: the main job. A short chaos run of KIP-253 partition expansion on the local backend,
patched and unpatched side by side, ending in a verdict table and reports/runs/<id>/index.html.

Each side is one ChaosTest: a proxied 3-broker, 2-controller cluster; keyed sequences from three
producers, read by a group of two; the topic grows 4 -> 6 -> 8 partitions while the leaders of
its first partitions are isolated now and then. The patched side runs the proposals with the
ordered client; the unpatched side is Kafka before them with kafka-python's stock client. The
expected outcome: patched clean, unpatched caught reordering keys (`key-order`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from chaoskit.checkers.engine import ENGINES
from chaoskit.cluster.spec import new_run_id
from chaoskit.run.options import duration_arg
from chaoskit.roles import new_seed
from chaoskit.run.chaostest import ChaosTest, Topic
from chaoskit.run.mixes import LEADER_ISOLATION, SLOW_GROUP, SMALL_POLLS, TOPIC, admin_step, mix
from chaoskit.run.runner import run

SIDES = (("patched", "ordered"), ("unpatched", "kafka-python"))


def expansion_faults() -> dict[str, Any]:
    grow = [admin_step(0.2, "expand", 6), admin_step(0.45, "expand", 8)]
    return mix(grow, LEADER_ISOLATION, mean_interval_s=5.0, quiet_end_s=3.0)


def demo_tests(seed: int, duration_s: float, reports: Path, engine: str) -> list[ChaosTest]:
    return [ChaosTest("kip253-expansion", profile=profile, seed=seed, duration_s=duration_s, client=client,
                      topics=[Topic(TOPIC, 4)], faults=expansion_faults(), reports=reports, engine=engine,
                      workload_options=SLOW_GROUP, client_options=SMALL_POLLS,
                      labels={"epic": "KIP-253", "feature": "expansion under leader isolation"})
            for profile, client in SIDES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaoskit.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, help="seed of both runs (default: drawn and printed)")
    parser.add_argument("--duration", type=duration_arg, default=25.0, help="workload and faults per side: 25, 25s, 1m "
                        "(default 25 s)")
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="where runs/ goes")
    parser.add_argument("--engine", choices=ENGINES, default="auto", help="checker engine (auto: by the history's "
                        "size)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else new_seed()
    print(f"chaoskit demo: KIP-253 expansion under faults, seed {seed}, {args.duration:g} s per side "
          f"(patched, then unpatched)", flush=True)
    from chaoskit.reporting.summary import plot_run, write_summary
    from chaoskit.reporting.terminal import print_results

    results = []
    for test in demo_tests(seed, args.duration, args.reports, args.engine):
        print(f"-- {test.profile}: {test.client} client ...", flush=True)
        results.append(run(test, progress=sys.stderr.isatty()))
    results[1].expected = {"key-order"}  # the unpatched side exists to be caught
    plots = {r.run_id: plot_run(r) for r in results}
    out = args.reports / "demo" / new_run_id()  # the summary: each run has its own page in its folder
    index = write_summary(results, out, f"KIP-253 expansion under faults (seed {seed})", plots,
                          note="patched: the proposals with the ordered client; unpatched: Kafka before them "
                               "with kafka-python's client. Expected: patched clean, unpatched caught (key-order).")
    print_results(results, "KIP-253 expansion: patched vs unpatched")
    print(f"summary: {index}\nthe whole demo again: .venv/bin/python -m chaoskit.demo --seed {seed} "
          f"--duration {args.duration:g}")
    patched, unpatched = results
    as_expected = patched.valid is True and "key-order" in unpatched.anomalies
    print("as expected: the patched run checks clean and the unpatched run is caught" if as_expected else
          "NOT as expected: see the table above and the runs' logs", flush=True)
    return 0 if as_expected else 1


if __name__ == "__main__":
    sys.exit(main())
