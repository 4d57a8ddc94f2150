"""From history op dicts to the sub-histories the search reads, one per independent object.

Jepsen's conventions: an invoke pairs with the next completion of the same process; `fail`
means the op did not happen (dropped); `info`, or an invoke that never completed, is
indeterminate: it may have taken effect at any point after its invoke, or never. Ops are
ordered by `index` (the history's order, which is real-time order of the events).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Iterable

from chaoskit.checkers.linear.models import HistoryError, Model

NON_CLIENT_PROCESSES = {"nemesis"}  # Jepsen's fault injector shares the history but is no client


@dataclass(slots=True)
class Operation:
    """One op of a sub-history: `call`/`ret` are positions in the whole history (real-time order);
    `ret` is None for an indeterminate op, which may be linearized anywhere after `call`, or never."""
    index: int  # the invoke's history index, used in witnesses
    process: Any
    f: str
    arg: Any
    call: int
    ret: int | None
    completion_index: int | None = None


def _records(ops: Any) -> list[dict]:
    """Op dicts from a list of them or a pandas DataFrame (a missing column value is NaN/None there)."""
    if hasattr(ops, "to_dict") and hasattr(ops, "columns"):
        return [{k: v for k, v in row.items() if not _missing(v)} for row in ops.to_dict("records")]
    return list(ops)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # None or NaN


def _ordered(ops: Iterable[dict]) -> list[dict]:
    ops = _records(ops)
    for position, op in enumerate(ops):
        if not isinstance(op, dict):
            raise HistoryError(f"history entry {position} is not an op map: {op!r}")
        if op.get("type") not in ("invoke", "ok", "fail", "info"):
            raise HistoryError(f"op {op.get('index', position)}: type is invoke, ok, fail or info, got {op.get('type')!r}")
    if all("index" in op for op in ops):
        return sorted(ops, key=lambda op: op["index"])
    return [dict(op, index=position) for position, op in enumerate(ops)]


def pair(ops: Iterable[dict], model: Model) -> list[tuple[dict, dict | None, int, int | None]]:
    """(invoke, ok completion or None, invoke position, completion position or None) per op that
    may have happened; failed ops are left out."""
    pending: dict[Any, tuple[dict, int]] = {}
    done: list[tuple[dict, dict | None, int, int | None]] = []
    for position, op in enumerate(_ordered(ops)):
        if op.get("process") in NON_CLIENT_PROCESSES:
            continue
        if op.get("f") not in model.fs:
            if model.ignores_other_ops:
                continue
            raise HistoryError(f"op {op['index']}: f {op.get('f')!r} is not an operation of the {model.name} model "
                               f"({', '.join(sorted(model.fs))}); map Jepsen names with from_jepsen_ops")
        process = op.get("process")
        if op["type"] == "invoke":
            if process in pending:
                raise HistoryError(f"op {op['index']}: process {process!r} invoked again before its op "
                                   f"{pending[process][0]['index']} completed (a process runs one op at a time)")
            pending[process] = (op, position)
            continue
        if process not in pending:
            raise HistoryError(f"op {op['index']}: a {op['type']} completion with no invoke of process {process!r} before it")
        invoke, call = pending.pop(process)
        if op["type"] == "ok":
            done.append((invoke, op, call, position))
        elif op["type"] == "info":
            done.append((invoke, None, call, None))
    done.extend((invoke, None, call, None) for invoke, call in pending.values())  # never completed
    return done


def split(ops: Iterable[dict], model: Model) -> dict[Hashable, list[Operation]]:
    """The history as independent sub-histories (P-compositionality), each ordered by invoke."""
    subs: dict[Hashable, list[Operation]] = {}
    for invoke, completion, call, ret in pair(ops, model):
        for key, f, arg in model.interpret(invoke, completion):
            subs.setdefault(key, []).append(Operation(
                invoke["index"], invoke.get("process"), f, arg, call, ret,
                None if completion is None else completion["index"]))
    for sub in subs.values():
        sub.sort(key=lambda o: o.call)
    return subs
