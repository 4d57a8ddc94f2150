"""How fast the checks are: events/s of the full Kafka check set on Spark local[2] and in one
process (the local engine), as a ratio; and the linearizability checker's ops/s on key-value
histories of 10 and 50 concurrent clients.

For each size N: a seeded synthetic history of N events with every anomaly kind planted
(chaoskit.history.synthetic) is streamed to Parquet; Spark checks it from the file (the session's
start and a first small pass, where the JVM compiles the queries, are timed apart, once); the local engine checks the same history streamed from the generator
(its time minus the time to generate alone). Both verdicts must find exactly the plants, or the
figure is not printed as a pass.

Usage: python benchmarks/checker_throughput.py [--events 1000000,10000000] [--quick] [--seed N]
       [--skip-spark] [--skip-local] [--linear-ops N] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from chaoskit.checkers.compose import run_checks
from chaoskit.history.reader import History
from chaoskit.history import synthetic
from chaoskit.history.parquet import write_parquet


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    out = fn()
    return time.perf_counter() - began, out


def drain(it: Any) -> int:
    n = 0
    for _ in it:
        n += 1
    return n


def found(verdict: Any) -> dict[str, int]:
    return {n: r.counts.get("anomalies", -1) for n, r in verdict.results.items() if r.valid is not True}


def kafka(n: int, seed: int, workdir: Path, spark: bool, local: bool) -> dict[str, float]:
    plant = list(synthetic.KINDS)
    expected = synthetic.expected_for(plant)
    stream = lambda: synthetic.ops(seed=seed, events=n, plant=plant)  # noqa: E731
    gen_s, count = timed(lambda: drain(stream()))
    print(f"\n{n:,} events requested, {count:,} generated in {gen_s:.1f} s ({count / gen_s:,.0f} ops/s)", flush=True)
    row: dict[str, float] = {"events": count}
    if spark:
        path = workdir / f"history-{n}.parquet"
        write_s, _ = timed(lambda: write_parquet(stream(), path))
        print(f"  Parquet: {path.stat().st_size / 1e6:.1f} MB written in {write_s:.1f} s (including generation)")
        start_s = warm_up(workdir, seed)
        if start_s is not None:
            print(f"  Spark local[2] session and a first 10,000-event pass (JIT, code generation): {start_s:.1f} s "
                  "(once per process, not counted below)")
        check_s, verdict = timed(lambda: run_checks(History.from_path(path), engine="spark"))
        ok = found(verdict) == expected
        row["spark_eps"] = count / check_s
        print(f"  spark : {check_s:8.1f} s  {count / check_s:12,.0f} events/s  plants found exactly: {ok}",
              flush=True)
        if not ok:
            print(f"    expected {expected}, found {found(verdict)}")
        path.unlink()
    if local:
        total_s, verdict = timed(lambda: run_checks(_Streamed(stream()), engine="local"))
        check_s = max(total_s - gen_s, 1e-9)
        ok = found(verdict) == expected
        row["local_eps"] = count / check_s
        print(f"  local : {check_s:8.1f} s  {count / check_s:12,.0f} events/s  plants found exactly: {ok} "
              f"({total_s:.1f} s with generation)", flush=True)
    if "spark_eps" in row and "local_eps" in row:
        print(f"  ratio spark/local: {row['spark_eps'] / row['local_eps']:.2f}x")
    return row


_warmed = False


def warm_up(workdir: Path, seed: int) -> float | None:
    """Start Spark and run the checks once on a small history: the JVM compiles each query's code on
    first use, a per-process cost like the session's start, not a per-event one."""
    global _warmed
    if _warmed:
        return None
    _warmed = True
    from chaoskit.checkers.spark.session import spark as session
    path = write_parquet(synthetic.ops(seed=seed + 1, events=10_000, plant=list(synthetic.KINDS)),
                         workdir / "warm-up.parquet")
    took, _ = timed(lambda: (session(), run_checks(History.from_path(path), engine="spark")))
    return took


class _Streamed(History):
    """A History whose ops are a one-pass stream (the local engine reads it once, in index order)."""

    def __init__(self, stream: Any) -> None:
        super().__init__([])
        self._stream = stream
        self._kinds = {"send", "poll", "partition-mode", "coordinator"}  # the generator writes each kind

    @property
    def ops(self) -> Any:  # type: ignore[override]
        return self._stream

    def kinds(self) -> set[Any]:
        return self._kinds


def linear(clients_list: list[int], ops: int, seed: int, spark: bool) -> None:
    try:
        from chaoskit.checkers.linear import check
        from chaoskit.checkers.linear import synthetic as lsynth
    except ImportError as e:
        print(f"\nlinearizability: chaoskit.checkers.linear is not importable ({e}); skipped")
        return
    print(f"\nlinearizability (list-append model, {ops:,} ops per history, Wing-Gong/Lowe, split per key):")
    for clients in clients_list:
        s = lsynth.generate("list-append", seed=seed, clients=clients, ops=ops, keys=max(4, clients // 2))
        n = sum(1 for op in s.ops if op.get("type") == "invoke")
        t, r = timed(lambda: check(s.ops, "list-append", budget_s=120))
        print(f"  {clients:3d} clients, local : {t:7.2f} s  {n / t:10,.0f} ops/s  valid={r.valid}", flush=True)
        if spark:
            from chaoskit.checkers.spark.session import spark as session
            t, r = timed(lambda: check(s.ops, "list-append", spark=session(), budget_s=120))
            print(f"  {clients:3d} clients, spark : {t:7.2f} s  {n / t:10,.0f} ops/s  valid={r.valid}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", default="1000000,10000000", help="comma-separated history sizes")
    ap.add_argument("--quick", action="store_true", help="100,000 events and small linearizability histories")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--linear-ops", type=int, default=20_000, help="ops per linearizability history")
    ap.add_argument("--workdir", type=Path, help="where the Parquet histories go (default: a temporary dir)")
    args = ap.parse_args(argv)
    try:
        sizes = [int(x.replace("_", "")) for x in args.events.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--events takes comma-separated integers, got {args.events!r}")
    if args.quick:
        sizes, args.linear_ops = [100_000], 2_000
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="chaoskit-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        rows = [kafka(n, args.seed, workdir, not args.skip_spark, not args.skip_local) for n in sizes]
        linear([10, 50], args.linear_ops, args.seed, not args.skip_spark)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\nsummary (events/s; ratio = spark / local):")
    for r in rows:
        ratio = f"{r['spark_eps'] / r['local_eps']:.2f}x" if "spark_eps" in r and "local_eps" in r else "-"
        print(f"  {int(r['events']):>12,}  spark {r.get('spark_eps', 0):>12,.0f}  local {r.get('local_eps', 0):>12,.0f}"
              f"  ratio {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
