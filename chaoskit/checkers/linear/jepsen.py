"""Jepsen's op naming onto our models.

Jepsen's register tests use f :read/:write/:cas, which the cas-register model reads as they are
(once the keyword colons are gone). Its key-value tests name ops :read/:write/:append and wrap
each value with its key as an independent tuple `[k v]`; the kv model wants f get/put/append
with a `key` column. `from_jepsen_ops` does both mappings and passes every other field through.
"""
from __future__ import annotations

from typing import Any, Iterable

from chaoskit.checkers.linear.models import ALIASES, HistoryError

KV_NAMES = {"read": "get", "write": "put", "append": "append"}


def _plain(value: Any) -> Any:
    """`:read` -> `read`: EDN keywords as our loaders may leave them."""
    return value[1:] if isinstance(value, str) and value.startswith(":") else value


def from_jepsen_ops(ops: Iterable[dict], model: str = "cas-register", independent: bool | None = None) -> list[dict]:
    """Jepsen-shaped ops (EDN history or log text, as loaded) as ops our `model` reads.

    `independent`: values are Jepsen independent tuples `[key value]`; by default true for the kv
    model when an op has no `key` of its own, false for the register."""
    model = ALIASES.get(model, model)
    out = []
    for position, op in enumerate(ops):
        op = {_plain(k): v for k, v in op.items()}
        op["type"], op["f"] = _plain(op.get("type")), _plain(op.get("f"))
        if isinstance(op.get("process"), str):
            op["process"] = _plain(op["process"])
        if "time" in op and "time_ns" not in op:
            op["time_ns"] = op.pop("time")
        wrapped = independent if independent is not None else (model == "kv" and "key" not in op)
        if wrapped and op.get("process") != "nemesis":
            value = op.get("value")
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise HistoryError(f"op {op.get('index', position)}: an independent op's value is [key value], got {value!r}")
            op["key"], op["value"] = value[0], value[1]
        if model == "kv":
            op["f"] = KV_NAMES.get(op["f"], op["f"])
        out.append(op)
    return out
