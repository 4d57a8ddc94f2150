"""`chaoskit check PATH [PATH ...]`: a history's checks, as a table or JSON; the exit code is the verdict.

Exit 0 clean: every line was read and every check asked for had something to judge (by default,
each check the history exercises; the others are listed as not exercised); 1 anomaly (one was
found); 2 unknown; 3 a history it cannot read at all (missing, a folder, empty, not of its
format) or a bad option. Lines of the history that could not be read are listed; the
rest is checked, but a clean verdict over part of a history is unknown. `--model cas-register`, `kv`
or `list-append` checks linearizability (chaoskit.checkers.linear); the default model, kafka, runs
the Kafka checks. Several histories are checked in one process (one Spark session when Spark runs);
the exit code is the worst (1 if any found an anomaly, else 3 if any could not be read, else 2 if
any is unknown), and --json prints
one verdict per line, each with its `path`.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from chaoskit.checkers.result import verdict_word
from chaoskit.checkers.situate import witness_text

EXIT = {True: 0, False: 1, "unknown": 2}


def register(sub: Any) -> None:
    from chaoskit.checkers.catalog import CHECKS, MODELS
    from chaoskit.checkers.engine import ENGINES
    from chaoskit.history.reader import FORMATS

    p = sub.add_parser("check", help="check a history (JSONL, Parquet, Jepsen EDN or log) for anomalies",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", type=Path, nargs="+", metavar="path", help="the history file(s)")
    p.add_argument("--format", choices=FORMATS, help="the history's format (default: from the file's suffix)")
    p.add_argument("--model", choices=MODELS, default="kafka",
                   help="kafka: the Kafka checks; cas-register, kv (string values) or list-append (list values): "
                        "linearizability under that model")
    p.add_argument("--checks", help=f"comma-separated checks to run (default: every applicable one); "
                                    f"known: {', '.join(CHECKS)}")
    p.add_argument("--compacted-topics", help="comma-separated topics with cleanup.policy compact: a record a later "
                                              "one of its key superseded may go unread there (compaction)")
    p.add_argument("--json", action="store_true", help="print the full verdict as JSON")
    p.add_argument("--spark-master", help="a Spark master URL (default: local[2])")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="auto (default: this process below 5M ops, Spark from there or with --spark-master), "
                        "spark or local")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from chaoskit.run.checks import check_names
    from chaoskit.run.options import UsageError

    checks = [c.strip() for c in args.checks.split(",") if c.strip()] if args.checks else None
    if checks is not None:
        try:
            check_names(checks)
        except ValueError as e:
            raise UsageError(str(e)) from e
    codes = [check_one(path, args, checks) for path in args.paths]
    return 1 if 1 in codes else max(codes)


def check_one(path: Path, args: argparse.Namespace, checks: list[str] | None) -> int:
    from chaoskit.run.checks import run_checks
    from chaoskit.history.reader import History, detect_format

    from chaoskit.run.options import BAD_INPUT, one_line, unreadable

    try:
        history = History.from_path(path, args.format).readable(path)
        model = None if args.model == "kafka" else args.model
        if model is not None and (args.format or detect_format(path)) in ("edn", "jepsen-log"):
            history = history.named_for(model)
    except OSError as e:
        print(f"chaoskit check: {one_line(str(unreadable(path, e, 'history')))}", file=sys.stderr)
        return BAD_INPUT
    except ValueError as e:  # HistoryError among them
        print(f"chaoskit check: {one_line(str(e) if str(path) in str(e) else f'{path}: {e}')}", file=sys.stderr)
        return BAD_INPUT
    compacted = [t.strip() for t in (args.compacted_topics or "").split(",") if t.strip()]
    verdict = run_checks(history, checks, engine=args.engine, master=args.spark_master, model=model,
                         compacted_topics=compacted)
    if args.json:
        out = {**verdict.to_json(), "engine": verdict.engine}
        several = len(args.paths) > 1  # then a verdict per line, each naming its history
        print(json.dumps({"path": str(path), **out} if several else out, indent=None if several else 1, default=str))
    else:
        show(verdict, path, len(history))
    return EXIT[verdict.valid]


def show(verdict: Any, path: Path, ops: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    from chaoskit.reporting.terminal import STYLE as style
    from chaoskit.reporting.terminal import console as new_console

    console = new_console()
    table = Table(title=f"{path} ({ops} ops)")
    for col in ("check", "verdict", "counts", "first witness"):
        table.add_column(col, overflow="fold", no_wrap=col in ("check", "verdict"))
    for name, r in verdict.results.items():
        counts = ", ".join(f"{k} {v}" for k, v in r.counts.items())
        first = witness_text(r.witnesses[0]) if r.witnesses else (r.error or "")
        table.add_row(name, f"[{style.get(r.word, 'yellow')}]{r.word}[/]", counts, escape(first))
    console.print(table)
    for problem in verdict.problems[:20]:
        console.print(f"[yellow]unreadable[/] {problem}")
    if len(verdict.problems) > 20:
        console.print(f"[yellow]... and {len(verdict.problems) - 20} more unreadable lines[/]")
    word = verdict_word(verdict.valid)
    console.print(f"verdict: [{style.get(word, 'yellow')}]{word}[/]: {escape(verdict.tally)}"
                  + (f" ({escape(str(verdict.reason))})" if verdict.valid == "unknown" else "")
                  + f" [dim](checked on {verdict.engine})[/]", soft_wrap=True)
