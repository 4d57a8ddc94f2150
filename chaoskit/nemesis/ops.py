"""The ops a nemesis is driven by and leaves in the history (the Nemesis and Fault roles
themselves are protocols in chaoskit/roles.py).

A *Nemesis* (Jepsen's word) breaks and heals the cluster. It is driven by ops,
the same dicts every other process writes to the history (docs/history.md):

* process ``"nemesis"``, type ``"info"`` (a fault's effect is never an ok/fail
  answer), f ``"start"`` or ``"stop"``;
* value ``{"fault": name, "target": spec, "params": {...}, "window": id, "pick": n}``
  (``pick``, the window's seeded number for choices made when resolving, when it has one), to which
  ``invoke`` adds ``"resolved"``: the concrete node(s) the target spec named at
  that moment (e.g. ``{"broker": 2}`` for ``leader-of:orders/0``);
* ``error`` set when the nemesis raised: the fault is then indeterminate.

The history's recorder adds ``index`` and ``time_ns``. Fault packs in
plugins/faults implement a Nemesis per fault; nemesis/compose.py's
``ComposedNemesis`` routes a schedule's mix of faults to them by name.
"""
from __future__ import annotations

from typing import Any

from chaoskit.history.schema import Op
from chaoskit.roles import Fault

PROCESS = "nemesis"
START, STOP = "start", "stop"


def fault_op(f: str, fault: Fault) -> Op:
    """The op asking a nemesis to start or stop ``fault``."""
    if f not in (START, STOP):
        raise ValueError(f"a nemesis op's f is {START!r} or {STOP!r}, got {f!r}")
    value = {"fault": fault.name, "target": fault.target, "params": dict(fault.params), "window": fault.id}
    if getattr(fault, "pick", None) is not None:
        value["pick"] = fault.pick  # type: ignore[attr-defined]
    return {"process": PROCESS, "type": "info", "f": f, "value": value}


def with_resolved(op: Op, resolved: Any) -> Op:
    """A copy of ``op`` whose value records the concrete target the fault hit."""
    return {**op, "value": {**op["value"], "resolved": resolved}}


def with_error(op: Op, error: BaseException) -> Op:
    """A copy of ``op`` recording that the nemesis raised (outcome unknown)."""
    return {**op, "error": f"{type(error).__name__}: {error}"}
