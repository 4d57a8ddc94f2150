"""How fast the cycle checks are (G0, G1c and their -realtime forms) on a large transactional Jepsen
Kafka history: seconds in one process (the local engine) and on Spark local[2], and their ratio.

The history is Jepsen's Kafka workload's shape, written as EDN: `--txns` transactions over
`--keys` keys from `--processes` processes (each with one transaction open at a time, all of them
overlapping), each sending one value to one key and reading the last few values of another that
completed writers wrote. Planted: `--rings` G1c cycles of
length 2 to 6 (transactions each reading the next one's write, round to the first), each on keys
of its own. Every check is run on the same file (read and mapped by the Jepsen reader first, timed
apart); the figure is a pass only when G1c finds exactly the rings.

Usage: python benchmarks/cycles.py [--txns 250000] [--rings 5] [--seed N] [--skip-spark] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

CYCLE_CHECKS = ["G0", "G0-realtime", "G1c", "G1c-realtime"]


def history(txns: int, keys: int, processes: int, rings: int, seed: int) -> Iterator[str]:
    """EDN lines: clean transactions, then the planted rings (keys of their own, no overlap in time
    with the rest), each op map with its :index."""
    rng = random.Random(seed)
    index = 0
    value = 0

    def line(kind: str, process: int, mops: str) -> str:
        nonlocal index
        index += 1
        return f"{{:index {index - 1}, :type :{kind}, :process {process}, :f :txn, :value {mops}}}"

    # `processes` transactions open at once: each invoked, then completed once `processes` more were
    # invoked; it reads only values whose writers had completed when it was invoked (a clean history)
    open_txns: list[tuple[int, str]] = []
    done: dict[int, list[int]] = {k: [] for k in range(keys)}  # key -> values of completed writers, in order
    for i in range(txns):
        process = i % processes
        k, r = rng.randrange(keys), rng.randrange(keys)
        value += 1
        read = done[r][-3:]
        reads = " ".join(f"[{len(done[r]) - len(read) + j} {v}]" for j, v in enumerate(read))
        yield line("invoke", process, f"[[:send {k} {value}] [:poll]]")
        open_txns.append((process, k, value, reads, r))
        if len(open_txns) >= processes:
            p_, k_, v_, reads_, r_ = open_txns.pop(0)
            done[k_].append(v_)
            yield line("ok", p_, f"[[:send {k_} [{len(done[k_]) - 1} {v_}]] [:poll {{{r_} [{reads_}]}}]]")
    for p_, k_, v_, reads_, r_ in open_txns:
        done[k_].append(v_)
        yield line("ok", p_, f"[[:send {k_} [{len(done[k_]) - 1} {v_}]] [:poll {{{r_} [{reads_}]}}]]")
    base = keys
    for n in [2 + i % 5 for i in range(rings)]:  # rings of 2, 3, 4, 5, 6, 2, ...
        members = range(processes, processes + n)
        for j, p in enumerate(members):
            yield line("invoke", p, f"[[:send {base + j} {10**9 + base + j}] [:poll]]")
        for j, p in enumerate(members):
            nxt = (j + 1) % n
            yield line("ok", p, f"[[:send {base + j} [0 {10**9 + base + j}]] "
                                f"[:poll {{{base + nxt} [[0 {10**9 + base + nxt}]]}}]]")
        base += n


def main() -> int:
    from chaoskit.run.checks import run_checks
    from chaoskit.history.reader import History

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--txns", type=int, default=250_000, help="clean transactions (each two ops of ours: "
                   "a send and a poll, invoked and completed)")
    p.add_argument("--keys", type=int, default=2_000)
    p.add_argument("--processes", type=int, default=10, help="transactions open at once, one per process")
    p.add_argument("--rings", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--skip-spark", action="store_true")
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="chaoskit-cycles-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / "history.edn"
    try:
        began = time.perf_counter()
        with path.open("w") as f:
            for text in history(args.txns, args.keys, args.processes, args.rings, args.seed):
                f.write(text + "\n")
        wrote = time.perf_counter() - began
        began = time.perf_counter()
        h = History.from_path(path)
        ops = len(h.ops)
        read = time.perf_counter() - began
        print(f"history: {args.txns} transactions + {args.rings} rings, {ops} ops of ours "
              f"(written in {wrote:.1f} s, read and mapped in {read:.1f} s)")
        figures = {}
        for engine in ("local", *(() if args.skip_spark else ("spark",))):
            began = time.perf_counter()
            verdict = run_checks(h, CYCLE_CHECKS, engine=engine)
            took = time.perf_counter() - began
            g1c = verdict.results["G1c"]
            ok = g1c.counts.get("anomalies") == args.rings
            figures[engine] = took
            lengths = sorted(w["length"] for w in g1c.witnesses)
            print(f"{engine:6s}: {took:6.1f} s  G1c {g1c.counts.get('anomalies')} (lengths {lengths}), "
                  f"G1c-realtime {verdict.results['G1c-realtime'].counts.get('anomalies')}, "
                  f"G0 allowed {verdict.results['G0'].counts.get('allowed')}  {'pass' if ok else 'FAIL: rings not found'}")
        if "spark" in figures:
            print(f"spark / local: {figures['spark'] / figures['local']:.2f}")
        return 0
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
