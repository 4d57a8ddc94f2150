"""Histories as Parquet: the schema's columns, typed, for Spark (docs/history.md, "Parquet").

One row per op and one row per record a poll returned (`pos` its place in the poll; null on op
rows): the records are exploded here, once, so Spark reads deliveries as plain typed rows. A record
row carries its poll's index, time, process, type (`ok`: delivered; a failed or indeterminate poll's
records only show what the log held) and topic, `f` "poll", and the record's partition, offset,
key, value and leader epoch.

Each batch of ops is written as row groups of one kind each (`GROUPS`: send invokes, send
completions, polls, other ops, records), in index order within each: a Spark scan filtered by
kind skips the other kinds' row groups by their statistics instead of decoding them, and the
checks scan the file once per kind they read. Readers that need the ops in order sort by index.

`value`, `node` and any extra keys are stored as JSON text (`value` in its canonical form, see
`value_text`), `process` as text. Written in batches of ROWS ops, so a history of millions of
ops never sits in memory twice; `convert_jsonl` streams a recorder's JSONL file to Parquet without
holding its ops at all (orjson parses, the columns are built per batch).
"""
from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from chaoskit.history.schema import COLUMNS, Op, json_text, jsonl_ops, process_of, read_records, value_text

ROWS = 250_000
NAMES = (*COLUMNS, "extra", "pos")
_INTS = ("index", "time_ns", "partition", "offset", "leader_epoch", "pos")
_TEXT_JSON = ("value", "node")
_COLUMN_SET = frozenset(COLUMNS)


def arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(name, pa.int64() if name in _INTS else pa.string()) for name in NAMES])


GROUPS = ("invokes", "completions", "polls", "other ops", "records")
_INVOKES, _COMPLETIONS, _POLLS, _OTHERS, _RECORDS = range(len(GROUPS))


class _Batch:
    """A batch of rows in NAMES order, one list per kind (GROUPS); `tables()` transposes each."""

    def __init__(self) -> None:
        self.groups: list[list[tuple[Any, ...]]] = [[] for _ in GROUPS]
        self.ops = 0

    def add(self, op: Op) -> None:
        g = op.get  # the hot loop of a conversion: one get per column, no intermediate list
        process, value, error, key, node = g("process"), g("value"), g("error"), g("key"), g("node")
        process = None if process is None else str(process)
        topic, index, time_ns, f, type_ = g("topic"), g("index"), g("time_ns"), g("f"), g("type")
        extra = None if _COLUMN_SET.issuperset(op) else \
            json_text({k: v for k, v in op.items() if k not in _COLUMN_SET}, sort=False)
        self.groups[_group_of(f, type_)].append((
            index, time_ns, process, type_, f, None if value is None else value_text(value),
            None if error is None else str(error), topic, g("partition"), None if key is None else str(key),
            g("offset"), g("leader_epoch"), None if node is None else value_text(node), extra, None))
        self.ops += 1
        records = read_records(op)
        if records:
            self.groups[_RECORDS].extend((index, time_ns, process, type_, "poll", v, None, topic, p, k, o, e, None,
                                          None, pos) for pos, (p, o, k, v, e) in enumerate(records))

    def tables(self) -> list[Any]:
        """A table per kind: the rows (tuples) read as one struct array, in Arrow's C++ (transposing
        them in Python first, then a column at a time, took twice as long)."""
        import pyarrow as pa

        schema = arrow_schema()
        row = pa.struct(list(schema))
        return [struct_table(pa.array(rows, type=row), schema) for rows in self.groups if rows]


def _group_of(f: Any, type_: Any) -> int:
    """The row group kind (GROUPS) of an op's own row."""
    if f == "send":
        return _INVOKES if type_ == "invoke" else _COMPLETIONS
    return _POLLS if f == "poll" else _OTHERS


def struct_table(rows: Any, schema: Any) -> Any:
    """The table of a struct array's rows; Arrow returns rows holding over 2 GB of text as a
    chunked array (a string array's offsets are 32-bit), a batch per chunk."""
    import pyarrow as pa

    chunks = rows.chunks if isinstance(rows, pa.ChunkedArray) else [rows]
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(chunk) for chunk in chunks], schema=schema)


def _batches(ops: Iterable[Op]) -> Iterator[_Batch]:
    batch = _Batch()
    for op in ops:
        batch.add(op)
        if batch.ops >= ROWS:
            yield batch
            batch = _Batch()
    if batch.ops:
        yield batch


def write_parquet(ops: Iterable[Op], path: str | Path) -> Path:
    """Write ops (any iterable, streamed in row groups) to one Parquet file."""
    with _gc_paused():
        return _write_tables((batch.tables() for batch in _batches(ops)), path)


def convert_jsonl(jsonl: str | Path, path: str | Path, workers: int | None = None) -> tuple[Path, list[str]]:
    """Stream a JSONL history to Parquet; returns the file and the lines that could not be read
    ("line N: why"; an op without an index gets its line's place, N - 1). A file of more than
    CHUNK_BYTES is cut at line boundaries and its chunks converted by `workers` processes (default:
    one per core), written in order."""
    jsonl = Path(jsonl)
    chunks = _chunks(jsonl, CHUNK_BYTES)
    workers = min(workers or os.cpu_count() or 1, len(chunks))
    problems: list[str] = []
    with _gc_paused():
        if workers <= 1:
            tables: Iterable[list[Any]] = (_convert_chunk(jsonl, *chunk, problems) for chunk in chunks)
            return _write_tables(tables, path), problems
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # forked: a spawned worker would re-run the caller's main script (any script without a main
        # guard breaks). The child only parses and builds Arrow tables (Arrow re-makes its pools
        # after a fork); it takes no lock another thread of the caller may hold (it does not log)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            done = pool.map(_convert_chunk_apart, [(jsonl, *chunk) for chunk in chunks])
            out = _write_tables((_problems_into(problems, *result) for result in done), path)
        return out, problems


CHUNK_BYTES = 16 << 20


def _chunks(path: Path, size: int) -> list[tuple[int, int, int]]:
    """(start byte, end byte, number of its first line) of chunks of about `size` bytes ending at line ends."""
    total = path.stat().st_size
    out, start, line = [], 0, 1
    with open(path, "rb") as f:
        while start < total:
            f.seek(min(start + size, total))
            f.readline()  # to the end of the line the cut fell in
            end = min(f.tell(), total)
            out.append((start, end, line))
            f.seek(start)
            line += f.read(end - start).count(b"\n")
            start = end
    return out or [(0, 0, 1)]


def _convert_chunk(path: Path, start: int, end: int, first_line: int, problems: list[str]) -> list[Any]:
    """The Arrow tables (a row group each) of one chunk of a JSONL file; bad lines into `problems`."""
    with open(path, "rb") as f:
        f.seek(start)
        lines = f.read(end - start).splitlines(keepends=True)
    return [table for batch in _batches(jsonl_ops(lines, problems, first_line)) for table in batch.tables()]


def _convert_chunk_apart(job: tuple[Path, int, int, int]) -> tuple[list[Any], list[str]]:
    """_convert_chunk in a worker process: its tables and its problems."""
    problems: list[str] = []
    with _gc_paused():
        return _convert_chunk(*job, problems), problems


def _problems_into(problems: list[str], tables: list[Any], found: list[str]) -> list[Any]:
    problems.extend(found)
    return tables


# the columns of few distinct values, dictionary-encoded; the others (index, times, offsets, values:
# mostly distinct) plain, as pyarrow would fall back to after filling a dictionary page in vain:
# at 1M events the writer took 0.28 s against 0.46 s, and the file 26 MB against 31 MB
DICTIONARY = ["process", "type", "f", "error", "topic", "partition", "key", "leader_epoch", "node", "extra", "pos"]


def _write_tables(chunks: Iterable[list[Any]], path: str | Path) -> Path:
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(path, arrow_schema(), use_dictionary=DICTIONARY) as writer:
        for tables in chunks:
            for table in tables:
                writer.write_table(table)
    return path


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while batches are built: their millions of fresh containers would
    set it off again and again (it found nothing to free and took half the time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_parquet(path: str | Path, indexes: Iterable[int] | None = None, processes: Iterable[str] = ()) -> list[Op]:
    """The ops of a Parquet history (written by write_parquet); with `indexes`, only those ops and
    the ops of `processes` (a witness's ops and the nemesis's, without loading the rest)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=[*COLUMNS, "extra", "pos"])
    # the op rows in index order (each batch's kinds are row groups apart)
    keep = pc.is_null(table.column("pos"))
    if indexes is not None:
        wanted = pc.or_(pc.is_in(table.column("index"), value_set=pa.array(sorted(indexes), pa.int64())),
                        pc.is_in(table.column("process"), value_set=pa.array(sorted(processes), pa.string())))
        keep = pc.and_(keep, pc.fill_null(wanted, False))
    table = table.filter(keep).drop_columns(["pos"]).sort_by("index")
    ops = []
    for row in table.to_pylist():
        extra = row.pop("extra")
        op = {k: v for k, v in row.items() if v is not None}
        for name in _TEXT_JSON:
            if name in op:
                op[name] = orjson.loads(op[name])
        op["process"] = process_of(op.get("process"))
        if extra:
            op.update(orjson.loads(extra))
        ops.append(op)
    return ops


def op_rows(path: str | Path) -> int:
    """How many ops (not record rows) a Parquet history holds."""
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["pos"]).column("pos").null_count
