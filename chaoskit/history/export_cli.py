"""`chaoskit export RUN_DIR --to jepsen-kafka [--out FILE]`: a run's history for Jepsen's tools.

Writes RUN_DIR/history.jsonl (or the history file named) as a Jepsen Kafka history.edn, one op map
per line (history/jepsen_kafka_write.py; docs/history.md, "Jepsen Kafka histories"), by default to
history.edn beside it. `chaoskit check` reads it back to the same verdict. Exit 0 written; 1 written,
but lines of the history could not be read (listed; they are not in the export); 3 nothing written:
a history it cannot read, or an --out it cannot write (one line says which).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXPORT_FORMATS = ("jepsen-kafka",)


def register(sub: Any) -> None:
    from chaoskit.history.reader import FORMATS

    p = sub.add_parser("export", help="write a run's history in another tool's format (Jepsen Kafka EDN)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", type=Path, help="a run directory (its history.jsonl) or a history file")
    p.add_argument("--to", choices=EXPORT_FORMATS, default="jepsen-kafka", help="the format to write (default "
                                                                                  "jepsen-kafka)")
    p.add_argument("--format", choices=FORMATS, help="the history's own format, as `chaoskit check` takes it "
                                                     "(default: from the file's suffix)")
    p.add_argument("--out", type=Path, help="the file to write (default: history.edn beside the history)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from chaoskit.run.options import UsageError, unreadable, unwritable
    from chaoskit.history.jepsen_kafka_write import write_jepsen_kafka
    from chaoskit.history.reader import History, HistoryError

    source = args.run / "history.jsonl" if args.run.is_dir() else args.run
    try:
        history = History.from_path(source, args.format).readable(source)
    except OSError as e:
        raise unreadable(source, e, "history") from None
    except HistoryError as e:
        raise UsageError(str(e)) from None
    out = args.out or source.with_name("history.edn")
    if out.resolve() == source.resolve():
        raise UsageError(f"{out} is the history itself; name another file with --out")
    if out.is_dir():
        raise UsageError(f"cannot write {out}: it is a folder; name a file (e.g. {out / 'history.edn'})")
    if not out.parent.is_dir():
        raise UsageError(f"cannot write {out}: its folder {out.parent} does not exist; create it or name another")
    try:
        write_jepsen_kafka(history.ops, out)
    except OSError as e:
        raise unwritable(out, e) from None
    print(f"wrote {out} ({len(history)} ops, {args.to})")
    for problem in history.problems:
        print(f"chaoskit export: {source}: unreadable, not exported: {problem}", file=sys.stderr)
    return 1 if history.problems else 0
