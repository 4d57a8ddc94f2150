"""How fast the checks are: events/s of the full Kafka check set on Spark local[2] and in one
process (the local engine), each beside the floor (a plain Spark scan-and-aggregate of the same
Parquet file, the better of two runs: what one pass over the data costs here) and as a ratio to
it and to each other; how fast a JSONL history converts to Parquet; and the linearizability
checker's ops/s in one process and on Spark.

For each size N: a seeded synthetic history of N events with every anomaly kind planted
(chaoskit.history.synthetic) is written as JSONL and converted to Parquet (timed: the recorder's
conversion); Spark checks it from the file (the session's start and a first small pass, where the
JVM compiles the queries, are timed apart, once); the local engine checks the same history streamed
from the generator (its time minus the time to generate alone). Spark checks each history twice:
the first pass, then again in the same process (its code compiled, as a nightly checks many runs);
each pass shows the JVM's CPU time and the part of it its JIT compilers took.
Beside the floor, the core: the passes over the data that any Spark plan of the checks must make
(a shuffle per table they group, a sort per order they walk), each alone; how far the check set is
from its core shows what its joins, caches and jobs add.
Every verdict must find exactly the plants, or the figure is not printed as a pass.

Usage: python benchmarks/checker_throughput.py [--events 1000000,10000000] [--quick] [--seed N]
       [--skip-spark] [--skip-local] [--linear-ops N] [--linear-clients 10,50] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import orjson

from chaoskit.run.checks import run_checks
from chaoskit.history.reader import History
from chaoskit.history import synthetic
from chaoskit.history.parquet import convert_jsonl, write_parquet


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
        jsonl, path = workdir / f"history-{n}.jsonl", workdir / f"history-{n}.parquet"
        with open(jsonl, "wb") as f:  # streamed: a history of 10M ops never sits in memory
            for op in stream():
                f.write(orjson.dumps(op) + b"\n")
        for workers in (1, None):
            convert_s, (_, problems) = timed(lambda: convert_jsonl(jsonl, path, workers=workers))
            row["convert_eps"] = count / convert_s
            print(f"  JSONL -> Parquet ({jsonl.stat().st_size / 1e6:,.0f} MB -> {path.stat().st_size / 1e6:.1f} MB), "
                  f"{'1 process' if workers == 1 else 'a process per core'}: {convert_s:.1f} s, "
                  f"{count / convert_s:,.0f} events/s{f', {len(problems)} problems' if problems else ''}", flush=True)
        jsonl.unlink()
        start_s = warm_up(workdir, seed)
        if start_s is not None:
            print(f"  Spark local[2] session and a first 10,000-event pass (JIT, code generation): {start_s:.1f} s "
                  f"(once per process, not counted below; Java {java_version()})")
        # twice, the better kept: a floor is the least a pass costs, and the first scan of a size
        # also pays the JIT's compiling of the reader (at 10M it once took 17.2 s, the core's seven
        # passes 17.9 s together)
        first_floor_s, rows = timed(lambda: scan_and_aggregate(path))
        floor_s = min(first_floor_s, timed(lambda: scan_and_aggregate(path))[0])
        row["floor_eps"] = count / floor_s
        print(f"  floor : {floor_s:8.1f} s  {count / floor_s:12,.0f} events/s  (one scan-and-aggregate of "
              f"{rows:,} rows, the better of two: the first took {first_floor_s:.1f} s)", flush=True)
        passes = core_passes(path)
        core_s = sum(passes.values())
        row["core_eps"] = count / core_s
        print(f"  core  : {core_s:8.1f} s  {count / core_s:12,.0f} events/s  {core_s / floor_s:5.1f}x the floor  "
              f"(the passes no check set can skip, each alone: "
              f"{', '.join(f'{name} {s:.1f} s' for name, s in passes.items())})", flush=True)
        # twice: the first pass over a history this size, then the same checks again in the same
        # process (a nightly or a suite checks many runs in one): the JVM has compiled their code
        for label, key in (("spark", "spark_eps"), ("again", "spark_again_eps")):
            before = jvm_work()
            check_s, verdict = timed(lambda: run_checks(History.from_path(path), engine="spark"))
            jit_s, cpu_s = (a - b for a, b in zip(jvm_work(), before))
            ok = found(verdict) == expected
            row[key] = count / check_s
            # the ratio to the core is the steadier figure: a plain scan (the floor) gains more from
            # a fast host than shuffles and sorts do (docs/scaling.md, 2026-11-28)
            print(f"  {label:6s}: {check_s:8.1f} s  {count / check_s:12,.0f} events/s  {check_s / floor_s:5.1f}x the floor  "
                  f"{check_s / core_s:4.1f}x the core  plants found exactly: {ok}  "
                  f"(the JVM's CPU {cpu_s:.1f} s, of it the JIT compiling {jit_s:.1f} s)", flush=True)
            if not ok:
                print(f"    expected {expected}, found {found(verdict)}")
        path.unlink()
    if local:
        before = peak_rss_mb()
        total_s, verdict = timed(lambda: run_checks(_Streamed(stream()), engine="local"))
        grew = peak_rss_mb() - before
        check_s = max(total_s - gen_s, 1e-9)
        ok = found(verdict) == expected
        row["local_eps"] = count / check_s
        versus = f"{row['floor_eps'] / row['local_eps']:5.1f}x the floor  " if "floor_eps" in row else ""
        print(f"  local : {check_s:8.1f} s  {count / check_s:12,.0f} events/s  {versus}plants found exactly: {ok} "
              f"({total_s:.1f} s with generation; this process's peak memory grew {grew:,.0f} MB)", flush=True)
    if "spark_eps" in row and "local_eps" in row:
        print(f"  ratio spark/local: {row['spark_eps'] / row['local_eps']:.2f}x first, "
              f"{row['spark_again_eps'] / row['local_eps']:.2f}x again")
    return row


def jvm_work() -> tuple[float, float]:
    """(seconds the JVM's JIT compilers have worked, seconds of CPU the JVM has used) so far. On two
    cores the compiler threads take their CPU from the tasks: the first pass over a new size pays it."""
    from chaoskit.checkers.spark.session import spark as session

    management = session().sparkContext._jvm.java.lang.management.ManagementFactory
    jit_s = management.getCompilationMXBean().getTotalCompilationTime() / 1000
    pid = management.getRuntimeMXBean().getPid()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return jit_s, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def java_version() -> str:
    """The driver JVM's version (spark/session.py `driver_java_home` picks the newest JDK Spark supports)."""
    from chaoskit.checkers.spark.session import spark as session

    return str(session().sparkContext._jvm.java.lang.System.getProperty("java.version"))


def peak_rss_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scan_and_aggregate(path: Path) -> int:
    """The floor: every column the checks read, scanned once and aggregated (no join, no shuffle of rows)."""
    from pyspark.sql import functions as F
    from chaoskit.checkers.spark.session import spark as session

    rows = session().read.parquet(str(path)).groupBy("f", "type").agg(
        F.count(F.lit(1)).alias("n"), F.max("index"), F.max("offset"), F.max("partition"), F.max("pos"),
        F.sum(F.length("value")), F.approx_count_distinct("process"), F.max("topic"), F.max("key"),
        F.max("time_ns"), F.max("error"), F.max("extra")).collect()
    return sum(r["n"] for r in rows)


def core_passes(path: Path) -> dict[str, float]:
    """The check set's core: the passes over the history it cannot do without, each a bare Spark
    job (read the file, one shuffle and an aggregate or a sort and a window, nothing joined, cached
    or collected), timed alone. Their sum is what any Spark plan of these checks pays at least:
    the sends paired with their completions and the deliveries' first per value (lost writes), the
    offsets' values (duplicates, replaced offsets), and the orders the windows walk: a consumer's
    deliveries per partition (poll skips), a producer's sends per key (key order), per partition
    (send order) and each key's sends (its home partition, write-to-readonly)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from chaoskit.checkers.spark.session import size_shuffles, spark as session

    import pyarrow.parquet as pq

    s = session()
    df = s.read.parquet(str(path))
    size_shuffles(s, pq.ParquetFile(path).metadata.num_rows)  # as the engine sizes them, without a job
    records = df.filter(F.col("pos").isNotNull())
    sends = df.filter(F.col("pos").isNull() & (F.col("f") == "send"))
    invokes, done = sends.filter(F.col("type") == "invoke"), sends.filter(F.col("type") != "invoke")

    def walk(rows: Any, by: list[str], order: list[str], col: str) -> Any:
        return rows.select(*by, F.lag(col).over(Window.partitionBy(*by).orderBy(*order)).alias("previous"))

    jobs = {
        "pairs": sends.groupBy("process", "value").agg(F.min("index"), F.max("offset"), F.max("partition")),
        "first": records.groupBy("value").agg(F.min("index"), F.min("partition")),
        "offsets": records.groupBy("topic", "partition", "offset").agg(F.min(F.xxhash64("value"))),
        "steps": walk(records, ["process", "topic", "partition"], ["index", "pos"], "offset"),
        "key order": walk(invokes, ["process", "key"], ["index"], "value"),
        "send order": walk(done, ["process", "topic", "partition"], ["index"], "offset"),
        "key homes": walk(done, ["topic", "key"], ["index"], "partition"),
    }
    return {name: timed(lambda: job.write.format("noop").mode("overwrite").save())[0] for name, job in jobs.items()}


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
    took, _ = timed(lambda: (session(), run_checks(History.from_path(path), engine="spark"), core_passes(path)))
    return took


class _Streamed(History):
    """A History whose ops are a one-pass stream (the local engine reads it once, in index order)."""

    def __init__(self, stream: Any) -> None:
        super().__init__([])
        self._stream = stream
        self._kinds = {"send", "poll", "partition-mode", "coordinator", "restore"}  # the generator writes each kind

    @property
    def ops(self) -> Any:  # type: ignore[override]
        return self._stream

    def kinds(self) -> set[Any]:
        return self._kinds


def linear(clients_list: list[int], ops: int, seed: int, spark: bool) -> None:
    from chaoskit.checkers.linear import check
    from chaoskit.checkers.linear import synthetic as lsynth

    print(f"\nlinearizability (list-append model, {ops:,} ops per history, Wing-Gong/Lowe, split per key):")
    for clients in clients_list:
        s = lsynth.generate("list-append", seed=seed, clients=clients, ops=ops, keys=max(4, clients // 2))
        n = sum(1 for op in s.ops if op.get("type") == "invoke")
        t_local, r = timed(lambda: check(s.ops, "list-append", budget_s=600))
        print(f"  {clients:3d} clients, local : {t_local:7.2f} s  {n / t_local:10,.0f} ops/s  valid={r.valid}", flush=True)
        if spark:
            from chaoskit.checkers.spark.session import spark as session
            t, r = timed(lambda: check(s.ops, "list-append", spark=session(), budget_s=600))
            print(f"  {clients:3d} clients, spark : {t:7.2f} s  {n / t:10,.0f} ops/s  valid={r.valid}  "
                  f"ratio spark/local {t_local / t:.2f}x", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", default="1000000,10000000", help="comma-separated history sizes")
    ap.add_argument("--quick", action="store_true", help="100,000 events and small linearizability histories")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--linear-ops", type=int, default=1_000_000, help="ops per linearizability history (0: none)")
    ap.add_argument("--linear-clients", default="10,50", help="comma-separated concurrent clients")
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
        if args.linear_ops > 0:  # 0: the Kafka checks only
            linear([int(c) for c in args.linear_clients.split(",")], args.linear_ops, args.seed, not args.skip_spark)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\nsummary (events/s; spark/local; each engine's and the core's time over the floor's; "
          "spark's over the core's):")
    for r in rows:
        def ratio(a: str, b: str) -> str:
            return f"{r[a] / r[b]:.2f}x" if a in r and b in r else "-"
        print(f"  {int(r['events']):>12,}  convert {r.get('convert_eps', 0):>10,.0f}  floor {r.get('floor_eps', 0):>10,.0f}"
              f"  spark {r.get('spark_eps', 0):>10,.0f} (again {r.get('spark_again_eps', 0):>10,.0f})"
              f"  local {r.get('local_eps', 0):>10,.0f}"
              f"  spark/local {ratio('spark_eps', 'local_eps')} (again {ratio('spark_again_eps', 'local_eps')})"
              f"  spark {ratio('floor_eps', 'spark_eps')} (again {ratio('floor_eps', 'spark_again_eps')})"
              f"  core {ratio('floor_eps', 'core_eps')}"
              f"  spark/core {ratio('core_eps', 'spark_eps')} (again {ratio('core_eps', 'spark_again_eps')})"
              f"  local {ratio('floor_eps', 'local_eps')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
