"""History: the ops a check reads, from a list or a file in any supported format (the read side;
history/recorder.py is the write side).

    History.from_path("reports/runs/x/history.jsonl")       # .jsonl, .parquet, .edn, .log/.txt
    History.from_path("history.edn", format="edn")
    History.from_path("history.edn", format="jepsen-kafka")  # Jepsen's Kafka workload (history.jepsen_kafka)

A corrupt or truncated line is a `problem` ("line N: what is wrong"); the other lines still load
and are checked. Ops without an `index` get their position in the file.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from chaoskit.history.jepsen import from_jepsen_ops, read_edn_lines, read_log_lines
from chaoskit.history.jepsen_kafka import looks_like_jepsen_kafka, read_jepsen_kafka_lines
from chaoskit.history.parquet import op_rows, read_parquet, write_parquet
from chaoskit.history.schema import Op, jsonl_ops

FORMATS = ("jsonl", "parquet", "edn", "jepsen-kafka", "jepsen-log")
_SUFFIXES = {".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet", ".edn": "edn", ".log": "jepsen-log",
             ".txt": "jepsen-log"}


class HistoryError(ValueError):
    """A history that cannot be read at all (missing file, unknown format)."""


def parquet_columns(path: Path) -> list[str]:
    """The columns of the Parquet history at `path`; HistoryError when it is not one (empty, cut
    short, another format) or lacks the columns every check reads."""
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception as e:  # pyarrow's ArrowInvalid and OSError alike: the file cannot be Parquet
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise HistoryError(f"{path} is not a readable Parquet file ({first}); write one with chaoskit's "
                           f"history.to_parquet, or name the format with --format") from None
    missing = [c for c in ("index", "process", "type", "f") if c not in names]
    if missing:
        raise HistoryError(f"{path} is Parquet but not a chaoskit history: no column {', '.join(missing)}")
    return names


def read_jsonl_lines(lines: Iterable[str]) -> tuple[list[Op], list[str]]:
    problems: list[str] = []
    return list(jsonl_ops(lines, problems)), problems


def detect_format(path: Path) -> str:
    """The format its suffix names; an EDN history of Jepsen's Kafka workload (send/poll/txn ops of
    micro-ops, or chaoskit's export) is "jepsen-kafka"."""
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise HistoryError(f"cannot tell the format of {path} from its suffix {path.suffix!r}; "
                           f"name one with --format ({', '.join(FORMATS)})")
    if fmt == "edn" and path.is_file():
        with open(path, encoding="utf-8", errors="replace") as f:
            if looks_like_jepsen_kafka(f):
                return "jepsen-kafka"
    return fmt


class History:
    """Ops and the lines that could not be read. A Parquet history loads its ops only when asked
    (Spark reads the file itself, so a checked Parquet history never passes through Python)."""

    def __init__(self, ops: Iterable[Op] | None = None, problems: Iterable[str] = (),
                 source: Path | None = None) -> None:
        self.problems: list[str] = list(problems)
        self.source = source  # its Parquet copy (read from, or written by to_parquet): what Spark reads
        self._ops: list[Op] | None = None
        self._jepsen_fs: set[str] | None = None  # history.jepsen_kafka.jepsen_fs, once asked
        if ops is not None or source is None:
            self._set(list(ops or ()))

    def _set(self, ops: list[Op]) -> None:
        for i, op in enumerate(ops):
            if op.get("index") is None:
                op["index"] = i
        self._ops = ops

    @property
    def ops(self) -> list[Op]:
        if self._ops is None:
            self._set(read_parquet(self.source))
        return self._ops  # type: ignore[return-value]

    @property
    def loaded(self) -> bool:
        """Whether the ops are in memory (else they are read from `source` when asked for)."""
        return self._ops is not None

    def phases(self) -> list[str]:
        """The runner's phase marks in order ([] for a history no chaoskit runner wrote)."""
        from chaoskit.history.schema import PHASE, RUNNER_PROCESS

        ops = self._ops if self._ops is not None else read_parquet(self.source, (), (RUNNER_PROCESS,))
        return [op.get("value") for op in ops if op.get("f") == PHASE]

    def unfinished(self) -> str | None:
        """Why the history cannot show what its run's drain delivered, or None: a chaoskit run's
        history that holds no mark of the drain's end (the runner was stopped, or the file cut short)."""
        from chaoskit.history.schema import DRAINED

        marks = self.phases()
        if not marks or DRAINED in marks:
            return None
        return f"the run's history ends before its drain finished (its last phase: {marks[-1]})"

    def kinds(self) -> set[Any]:
        """The op kinds (f) present: which checks apply; "txn" too when ops came from a Jepsen :txn."""
        from chaoskit.history.jepsen_kafka import jepsen_fs

        txn = {"txn"} & jepsen_fs(self)
        if self._ops is None:
            import pyarrow.parquet as pq
            return set(pq.read_table(self.source, columns=["f"]).column("f").unique().to_pylist()) | txn
        return {op.get("f") for op in self._ops} | txn

    def __len__(self) -> int:
        if self._ops is None:
            return op_rows(self.source)
        return len(self._ops)

    @classmethod
    def from_path(cls, path: str | Path, format: str | None = None) -> History:  # noqa: A002 -- the CLI's word
        path = Path(path)
        if not path.exists():
            raise HistoryError(f"no history at {path}")
        if path.is_dir():
            raise HistoryError(f"{path} is a folder; name the history in it (a run's is history.jsonl)")
        fmt = format or detect_format(path)
        if fmt == "parquet":
            parquet_columns(path)
            return cls(None, source=path)
        readers = {"jsonl": read_jsonl_lines, "edn": read_edn_lines, "jepsen-kafka": read_jepsen_kafka_lines,
                   "jepsen-log": read_log_lines}
        if fmt not in readers:
            raise HistoryError(f"unknown history format {fmt!r}; use one of {', '.join(FORMATS)}")
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            ops, problems = readers[fmt](f)
        return cls(ops, problems)

    def readable(self, path: Path) -> History:
        """This history read from `path`, or HistoryError when it holds nothing to check: an empty
        file, or one of which no line could be read (another format: say which with --format)."""
        if len(self) == 0:
            if self.problems:
                raise HistoryError(f"{path}: no line could be read as a history op ({self.problems[0]}); name "
                                   f"its format with --format if its suffix does not say it")
            empty = path.is_file() and not path.read_bytes().strip()
            raise HistoryError(f"{path} holds no op: it is empty" if empty else
                               f"{path} holds no op read as {detect_format(path)}; name its format with --format "
                               f"if its suffix does not say it")
        return self

    def named_for(self, model: str) -> History:
        """A Jepsen history's ops renamed as the linearizability `model` reads them (history.jepsen)."""
        return History(from_jepsen_ops(self.ops, model), self.problems)

    def to_parquet(self, path: str | Path) -> Path:
        """Write the ops as Parquet at `path`, which then is this history's Parquet copy (`source`)."""
        self.source = write_parquet(self.ops, path)
        return self.source

    def to_jsonl(self, path: str | Path) -> Path:
        path = Path(path)
        with open(path, "w", encoding="utf-8") as f:
            for op in self.ops:
                f.write(json.dumps(op, separators=(",", ":"), ensure_ascii=False, default=str) + "\n")
        return path

    def __repr__(self) -> str:
        return f"History({len(self)} ops, {len(self.problems)} problems)"


def as_history(source: Any) -> History:
    """A History from a History, a list of ops or a path."""
    if isinstance(source, History):
        return source
    if isinstance(source, (str, Path)):
        return History.from_path(source)
    return History(source)
