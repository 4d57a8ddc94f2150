"""Throughput of the linearizability checker (`linearizable`, list-append or kv model) on synthetic
histories that are linearizable by construction: ops/s in-process and on Spark, and their ratio.

The histories come from chaoskit.checkers.linear.synthetic (seeded): N concurrent clients over
K keys, so each key's sub-history has about N/K ops open at once; the search cost grows with
that concurrency, which is why the key count is printed next to every figure. Spark's session
start-up is left out (one warm-up job runs first); its per-job overhead is in.

`measure(clients, ops, spark=None, model="list-append")` is importable (benchmarks/checker_throughput.py uses it).

Each figure is the median of --repeat runs (the machine may be shared).

Usage: python benchmarks/linearizability.py [--ops 20000] [--clients 10,50] [--keys 10] [--repeat 3]
                                             [--spark-master local[2]] [--no-spark] [--seed 0]
                                             [--model list-append|kv]
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from chaoskit.checkers.linear import check
from chaoskit.checkers.linear.synthetic import generate

DEFAULT_KEYS = 10
MODELS = ("list-append", "kv")  # the keyed models synthetic.generate writes histories for


def measure(clients: int, ops: int, spark: Any = None, keys: int = DEFAULT_KEYS, seed: int = 0,
            info_rate: float = 0.0, budget_s: float = 120.0, model: str = "list-append") -> float:
    """Ops per second of check() on a clean `model` history of `ops` ops from `clients` clients."""
    history = generate(model, seed=seed, clients=clients, ops=ops, keys=keys, info_rate=info_rate)
    started = time.perf_counter()
    result = check(history.ops, model, spark=spark, budget_s=budget_s)
    elapsed = time.perf_counter() - started
    if result.valid is not True:  # the speed of a wrong answer is no figure
        raise RuntimeError(f"a linearizable history checked as {result.valid!r}: {result.error or result.witnesses[:1]}")
    return ops / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--clients", default="10,50", help="comma-separated client counts")
    parser.add_argument("--keys", type=int, default=DEFAULT_KEYS)
    parser.add_argument("--info-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--model", choices=MODELS, default="list-append",
                        help="list-append: list values; kv: string values (Porcupine's key-value model)")
    args = parser.parse_args()
    spark = None
    if not args.no_spark:
        from chaoskit.checkers.linear.spark_run import local_session

        spark = local_session(args.spark_master)
        measure(4, 200, spark, keys=4, model=args.model)  # warm-up: JVM, Python workers
    print(f"linearizability checker, {args.model} model, {args.ops} ops over {args.keys} keys, seed {args.seed}, "
          f"median of {args.repeat}")
    print(f"{'clients':>8} {'in-process ops/s':>17} {'spark ops/s':>12} {'spark/in-process':>17}")
    try:
        for clients in (int(c) for c in args.clients.split(",")):
            common = dict(keys=args.keys, seed=args.seed, info_rate=args.info_rate, model=args.model)
            local = statistics.median(measure(clients, args.ops, **common) for _ in range(args.repeat))
            if spark is None:
                print(f"{clients:>8} {local:>17,.0f} {'-':>12} {'-':>17}")
                continue
            distributed = statistics.median(measure(clients, args.ops, spark, **common) for _ in range(args.repeat))
            print(f"{clients:>8} {local:>17,.0f} {distributed:>12,.0f} {distributed / local:>17.2f}")
    finally:
        if spark is not None:
            spark.stop()


if __name__ == "__main__":
    main()
