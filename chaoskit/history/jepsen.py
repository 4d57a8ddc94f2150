"""Jepsen's history formats as ops of our schema: history.edn (one op map per line) and log text.

A Jepsen op `{:process 0, :type :invoke, :f :write, :value 3, :time 12, :index 5}` becomes
`{"process": 0, "type": "invoke", "f": "write", "value": 3, "time_ns": 12, "index": 5}`; other keys
are kept as they are. A log line `INFO  jepsen.util - 3\t:ok\t:cas\t[1 4]` (or the newer
`... jepsen.util: 3\t:ok\t...`) gives the op from its tab-separated process, type, f and value
(and error, when a fifth field is there). Lines that are not ops (other loggers) are skipped; an op
line that does not parse is reported by number, the rest still load.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

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


def read_edn_lines(lines: Iterable[str]) -> tuple[list[Op], Problems]:
    ops: list[Op] = []
    problems: Problems = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith(";"):
            continue
        try:
            ops.append(op_from_map(edn.loads(line)))
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
        fields = m.group(1).split("\t")
        try:
            if len(fields) < 3:
                raise SchemaError(f"an op line has process, type, f and value separated by tabs; got {fields!r}")
            process = edn.loads(fields[0])
            op: Op = {"process": process, "type": edn.loads(fields[1]), "f": edn.loads(fields[2]),
                      "value": edn.loads(fields[3]) if len(fields) > 3 and fields[3].strip() else None}
            if len(fields) > 4 and fields[4].strip():
                err = edn.loads(fields[4])
                op["error"] = err if isinstance(err, str) else edn_text(err)
            ops.append(check_op(op))
        except (edn.EdnError, SchemaError) as e:
            problems.append(f"line {n}: {e}")
    return ops, problems
