"""Jepsen's histories as ops of our schema: history.edn (one op map per line), log text, and
Jepsen's op naming mapped onto the linearizability models.

A Jepsen op `{:process 0, :type :invoke, :f :write, :value 3, :time 12, :index 5}` becomes
`{"process": 0, "type": "invoke", "f": "write", "value": 3, "time_ns": 12, "index": 5}`; other keys
are kept as they are. A log line `INFO  jepsen.util - 3\t:ok\t:cas\t[1 4]` (or the newer
`... jepsen.util: 3\t:ok\t...`) gives the op from its process, type, f and value, and an error
when text follows the value. Fields are separated by tabs or by runs of spaces, and a value may hold
spaces itself (`[1 4]`, `"a b"`), so process, type and f are the first three whitespace-separated
tokens, the value is the one EDN form after them and the error is the rest of the line (its EDN
value when it is one form: Jepsen prints it with `str`, not `pr-str`). Lines that are not ops
(other loggers) are skipped; an op line that does not parse is reported by number, the rest still
load.

Reading and naming are two steps because they differ in what they know: the readers turn Jepsen's
syntax into ops and know no model; `from_jepsen_ops` then renames ops for the model a check will
use (register ops as they are; kv and list-append ops `:read/:write/:append` on independent `[k v]`
tuples become `get/put/append` with a `key`), which only the caller choosing the model knows.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Iterator

from chaoskit.history import edn
from chaoskit.history.schema import Op, SchemaError, check_op

Problems = list[str]
_LOG_OP = re.compile(r"jepsen\.util(?: -|:) (.*)$")
_RENAMES = {"time": "time_ns"}


def op_from_map(m: Any) -> Op:
    """Our op for one Jepsen op map."""
    if not isinstance(m, dict):
        raise SchemaError(f"a Jepsen op is a map, got {type(m).__name__}")
    op = {_RENAMES.get(str(k), str(k)): v for k, v in m.items()}
    err = op.get("error")
    if err is not None and not isinstance(err, str):
        op["error"] = edn_text(err)
    return check_op(op)


def edn_text(v: Any) -> str:
    """A compact rendering of a parsed EDN value for error texts."""
    if isinstance(v, list):
        return "[" + " ".join(edn_text(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{edn_text(k)} {edn_text(x)}" for k, x in v.items()) + "}"
    return "nil" if v is None else str(v)


def edn_forms(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each EDN line of a history (blank and `;` comment lines skipped); a
    line that does not parse gives its EdnError as the value."""
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith(";"):
            continue
        try:
            yield n, edn.loads(line)
        except edn.EdnError as e:
            yield n, e


def read_edn_lines(lines: Iterable[str]) -> tuple[list[Op], Problems]:
    ops: list[Op] = []
    problems: Problems = []
    for n, m in edn_forms(lines):
        try:
            if isinstance(m, edn.EdnError):
                raise m
            ops.append(op_from_map(m))
        except (edn.EdnError, SchemaError) as e:
            problems.append(f"line {n}: {e}")
    return ops, problems


def read_log_lines(lines: Iterable[str]) -> tuple[list[Op], Problems]:
    ops: list[Op] = []
    problems: Problems = []
    for n, line in enumerate(lines, 1):
        m = _LOG_OP.search(line.rstrip("\r\n"))
        if not m:
            continue  # another logger's line: not an op
        try:
            ops.append(log_op(m.group(1)))
        except (edn.EdnError, SchemaError) as e:
            problems.append(f"line {n}: {e}")
    return ops, problems


def log_op(text: str) -> Op:
    """The op in a log line's text after `jepsen.util -`: process, type, f, value and error."""
    fields = text.split(None, 3)
    if len(fields) < 3:
        raise SchemaError(f"an op line has process, type, f and value separated by tabs or spaces; "
                          f"got {text.strip()!r}")
    op: Op = {"process": edn.loads(fields[0]), "type": edn.loads(fields[1]), "f": edn.loads(fields[2]), "value": None}
    rest = fields[3] if len(fields) > 3 else ""
    if rest.strip():
        op["value"], end = edn.loads_prefix(rest)
        error = rest[end:]
        if error and not error[0].isspace():
            raise SchemaError(f"the value {rest[:end]!r} runs into {error[:20]!r}: separate the error with a tab "
                              f"or space")
        if error.strip():
            op["error"] = _error_text(error.strip())
    return check_op(op)


def _error_text(text: str) -> str:
    """A log line's error: its EDN value as text when it is one form, else the text as written."""
    try:
        err = edn.loads(text)
    except edn.EdnError:
        return text
    return err if isinstance(err, str) else edn_text(err)


KV_MODELS = ("kv", "key-value", "list-append", "list")  # the models (and aliases) of get/put/append on keys
KV_NAMES = {"read": "get", "write": "put", "append": "append"}


def _plain(value: Any) -> Any:
    """`:read` -> `read`: EDN keywords as our loaders may leave them."""
    return value[1:] if isinstance(value, str) and value.startswith(":") else value


def from_jepsen_ops(ops: Iterable[dict], model: str = "cas-register", independent: bool | None = None) -> list[dict]:
    """Jepsen-shaped ops (EDN history or log text, as loaded) as ops our `model` reads.

    `independent`: values are Jepsen independent tuples `[key value]`; by default true for the kv and
    list-append models when an op has no `key` of its own, false for the register."""
    kv = model in KV_MODELS
    out = []
    for position, op in enumerate(ops):
        op = {_plain(k): v for k, v in op.items()}
        op["type"], op["f"] = _plain(op.get("type")), _plain(op.get("f"))
        if isinstance(op.get("process"), str):
            op["process"] = _plain(op["process"])
        if "time" in op and "time_ns" not in op:
            op["time_ns"] = op.pop("time")
        wrapped = independent if independent is not None else (kv and "key" not in op)
        if wrapped and op.get("process") != "nemesis":
            value = op.get("value")
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise SchemaError(f"op {op.get('index', position)}: an independent op's value is [key value], "
                                  f"got {value!r}")
            op["key"], op["value"] = value[0], value[1]
        if kv:
            op["f"] = KV_NAMES.get(op["f"], op["f"])
        out.append(op)
    return out
