"""Histories as Parquet: the schema's columns, typed, for Spark (docs/history.md, "Parquet").

`value`, `node` and any extra keys are stored as JSON text (`value` in its canonical form, see
`value_text`), `process` as text; an ok poll's delivered records are also stored typed in
`records`, so Spark explodes them without parsing JSON. Written in row groups of ROWS ops, so a
history of millions of ops never sits in memory twice.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from chaoskit.history.schema import COLUMNS, Op, poll_records, process_of, value_text

ROWS = 250_000
_TEXT_JSON = ("value", "node")


def arrow_schema() -> Any:
    import pyarrow as pa

    record = pa.struct([("partition", pa.int64()), ("offset", pa.int64()), ("key", pa.string()),
                        ("value", pa.string()), ("leader_epoch", pa.int64())])
    return pa.schema([("index", pa.int64()), ("time_ns", pa.int64()), ("process", pa.string()),
                      ("type", pa.string()), ("f", pa.string()), ("value", pa.string()), ("error", pa.string()),
                      ("topic", pa.string()), ("partition", pa.int64()), ("key", pa.string()),
                      ("offset", pa.int64()), ("leader_epoch", pa.int64()), ("node", pa.string()),
                      ("extra", pa.string()), ("records", pa.list_(record))])


def _columns(ops: list[Op]) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {name: [] for name in (*COLUMNS, "extra", "records")}
    for op in ops:
        for name in COLUMNS:
            v = op.get(name)
            if name in _TEXT_JSON:
                v = value_text(v)
            elif name in ("process", "key", "error") and v is not None:
                v = str(v)
            cols[name].append(v)
        extra = {k: v for k, v in op.items() if k not in COLUMNS}
        cols["extra"].append(json.dumps(extra, separators=(",", ":"), default=str) if extra else None)
        recs = poll_records(op)
        cols["records"].append([dict(zip(("partition", "offset", "key", "value", "leader_epoch"), r))
                                for r in recs] if recs else None)
    return cols


def _batches(ops: Iterable[Op]) -> Iterator[list[Op]]:
    batch: list[Op] = []
    for op in ops:
        batch.append(op)
        if len(batch) >= ROWS:
            yield batch
            batch = []
    if batch:
        yield batch


def write_parquet(ops: Iterable[Op], path: str | Path) -> Path:
    """Write ops (any iterable, streamed in row groups) to one Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = arrow_schema()
    with pq.ParquetWriter(path, schema) as writer:
        for batch in _batches(ops):
            writer.write_table(pa.table(_columns(batch), schema=schema))
    return path


def read_parquet(path: str | Path) -> list[Op]:
    """The ops of a Parquet history (written by write_parquet)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=[*COLUMNS, "extra"])
    ops = []
    for row in table.to_pylist():
        extra = row.pop("extra")
        op = {k: v for k, v in row.items() if v is not None}
        for name in _TEXT_JSON:
            if name in op:
                op[name] = json.loads(op[name])
        op["process"] = process_of(op.get("process"))
        if extra:
            op.update(json.loads(extra))
        ops.append(op)
    return ops
