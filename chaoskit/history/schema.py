"""The op schema (docs/history.md): column names, canonical value text, and op normalisation."""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

try:
    import orjson  # the checker side's fast JSON (a dependency); the node images, which only import Op, lack it
except ImportError:  # pragma: no cover -- exercised inside the node containers
    orjson = None  # type: ignore[assignment]

Op = dict[str, Any]
TYPES = ("invoke", "ok", "fail", "info")
# the columns every op may carry; anything else an op holds is kept as an extra
COLUMNS = ("index", "time_ns", "process", "type", "f", "value", "error", "topic", "partition", "key", "offset",
           "leader_epoch", "node")
INT_COLUMNS = ("index", "time_ns", "partition", "offset", "leader_epoch")
# KIP-253's key callbacks (value = [[topic, partition], ...]): a key leaves its partition, then arrives in another
KEY_REVOKED, KEY_ASSIGNED = "on_partition_key_maybe_revoked", "on_partition_key_assigned"
RESTORE_PROCESS = "restore"  # the process of the restore read's ops (run/restore.py)
# the runner's marks of where a run got to: info ops of process "runner", f "phase", the phase's name as
# value; DRAINED follows the drain's end, so a history without it ended before its drain finished
RUNNER_PROCESS, PHASE, DRAINED = "runner", "phase", "drained"


def value_text(value: Any) -> str | None:
    """A value as the checks compare it: compact JSON with sorted keys (None stays None).

    A send's value and the same value delivered by a poll give the same text, whichever loader
    read them, so values are joined on this text."""
    if value is None:
        return None
    return json_text(value)


def json_text(value: Any, sort: bool = True) -> str:
    """Compact JSON text, non-ASCII kept (orjson; json for what it refuses: non-text keys, huge ints)."""
    if orjson is not None:
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort else 0).decode()
        except TypeError:
            pass
    return json.dumps(value, separators=(",", ":"), sort_keys=sort, ensure_ascii=False, default=str)


def process_of(text: Any) -> Any:
    """A process as ops carry it: an int for a client, else its name ("nemesis", "admin")."""
    if isinstance(text, str) and text.lstrip("-").isdigit():
        return int(text)
    return text


class SchemaError(ValueError):
    """An op that breaks the schema (says which field and why)."""


def check_op(op: Any) -> Op:
    """`op` if it is a well-formed op; SchemaError naming the fault otherwise."""
    if not isinstance(op, dict):
        raise SchemaError(f"an op is a JSON object, got {type(op).__name__}")
    g = op.get  # every line of a history passes here: the plain-int test first, isinstance only when it fails
    if g("type") not in TYPES:
        raise SchemaError(f"type must be one of {', '.join(TYPES)}, got {g('type')!r}")
    if not isinstance(g("f"), str):
        raise SchemaError(f"f must be a string naming the operation, got {g('f')!r}")
    if "process" not in op:
        raise SchemaError("process is missing (a client number, 'nemesis' or 'admin')")
    for name in INT_COLUMNS:
        v = g(name)
        if v is not None and type(v) is not int and (not isinstance(v, int) or isinstance(v, bool)):
            raise SchemaError(f"{name} must be an integer or null, got {v!r}")
    _polled(op)
    return op


_NONE: list[list[Any]] = []  # shared, never written to


def _polled(op: Op) -> list[list[Any]]:
    """A poll's records, as the op holds them, once their shape is checked ([] for any other op). An
    ok poll's value is its records; a failed or indeterminate one may hold the records it returned
    all the same (a Jepsen transaction's poll that aborted), or nothing."""
    if op.get("f") != "poll" or op.get("type") == "invoke":
        return _NONE
    value = op.get("value") or []
    if not isinstance(value, list):
        if op.get("type") != "ok":
            return _NONE
        raise SchemaError(f"an ok poll's value is a list of [partition, offset, key, value, leader_epoch], "
                          f"got {type(value).__name__}")
    for r in value:
        if not isinstance(r, list) or len(r) != 5 or type(r[0]) is not int or type(r[1]) is not int:
            raise SchemaError(f"a polled record is [partition:int, offset:int, key, value, leader_epoch], got {r!r}")
    return value


def poll_records(op: Op) -> list[tuple[Any, ...]]:
    """An ok poll's delivered records as (partition, offset, key, value text, leader_epoch) tuples."""
    return read_records(op) if op.get("type") == "ok" else []


def read_records(op: Op) -> list[tuple[Any, ...]]:
    """The records a poll of any outcome returned, as poll_records gives them: a failed poll's were
    not delivered, but they show what the log held (Jepsen's version order counts them)."""
    return [(r[0], r[1], r[2] if r[2] is None else str(r[2]), value_text(r[3]), r[4] if isinstance(r[4], int) else None)
            for r in _polled(op)]


_loads = orjson.loads if orjson is not None else json.loads


def jsonl_ops(lines: Iterable[str | bytes], problems: list[str], first_line: int = 1) -> Iterator[Op]:
    """The ops of JSON lines (text or bytes); a line that is not a well-formed op goes to `problems`
    as "line N: what is wrong" (truncated, not JSON, or the schema's complaint). An op without an
    index gets its line's place, N - 1."""
    for n, line in enumerate(lines, first_line):
        if not line or line.isspace():
            continue
        try:
            op = check_op(_loads(line))
        except json.JSONDecodeError as e:  # orjson's error is one
            what = "truncated" if not line.endswith(b"\n" if isinstance(line, bytes) else "\n") else "not JSON"
            problems.append(f"line {n}: {what} ({e.msg} at column {e.colno})")
            continue
        except SchemaError as e:
            problems.append(f"line {n}: {e}")
            continue
        if op.get("index") is None:
            op["index"] = n - 1
        yield op
