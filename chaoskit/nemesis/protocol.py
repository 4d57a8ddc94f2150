"""The nemesis role: what a fault injector implements, and the ops it leaves in the history.

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
plugins/faults implement :class:`Nemesis` per fault; :class:`ComposedNemesis`
routes a schedule's mix of faults to them by name.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

Op = dict[str, Any]
PROCESS = "nemesis"
START, STOP = "start", "stop"


@runtime_checkable
class Fault(Protocol):
    """One fault window: which fault, aimed where, from when to when.

    :class:`chaoskit.nemesis.schedule.Window` is the implementation schedules produce.
    """

    id: int  # the window's number in its schedule
    name: str  # the fault, e.g. "partition", "kill", "latency"
    target: str  # a target spec, see chaoskit.nemesis.targets
    params: Mapping[str, Any]
    start_s: float  # seconds after the run's start
    stop_s: float  # always <= the run's duration: every fault heals


@runtime_checkable
class Nemesis(Protocol):
    """Breaks and heals the cluster on command."""

    def setup(self, test: Any) -> None:
        """Prepare (connect to the proxy, look up nodes) before any fault starts."""

    def invoke(self, op: Op) -> Op:
        """Apply a start/stop op and return it completed with ``value["resolved"]``.

        Raising means the outcome is unknown; the executor records the op with an
        error and still sends the stop at heal time.
        """

    def teardown(self, test: Any) -> None:
        """Heal anything still broken and release resources; runs however the test ended."""


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


class NoopNemesis:
    """Injects nothing: the control run, and the default when a test names no faults."""

    def setup(self, test: Any) -> None:
        pass

    def invoke(self, op: Op) -> Op:
        return with_resolved(op, None)

    def teardown(self, test: Any) -> None:
        pass


class ComposedNemesis:
    """One Nemesis made of several, each handling the faults named by its key."""

    def __init__(self, by_fault: Mapping[str, Nemesis]):
        if not by_fault:
            raise ValueError("ComposedNemesis needs at least one fault name -> Nemesis")
        self.by_fault = dict(by_fault)

    def _distinct(self) -> list[Nemesis]:
        seen: dict[int, Nemesis] = {}
        for nemesis in self.by_fault.values():  # one nemesis may serve several fault names
            seen.setdefault(id(nemesis), nemesis)
        return list(seen.values())

    def setup(self, test: Any) -> None:
        for nemesis in self._distinct():
            nemesis.setup(test)

    def invoke(self, op: Op) -> Op:
        name = op["value"]["fault"]
        if name not in self.by_fault:
            raise ValueError(f"no nemesis handles fault {name!r}; this one handles {sorted(self.by_fault)}")
        return self.by_fault[name].invoke(op)

    def teardown(self, test: Any) -> None:
        # every part tears down even if an earlier one fails; the first error is raised after
        errors: list[BaseException] = []
        for nemesis in reversed(self._distinct()):
            try:
                nemesis.teardown(test)
            except Exception as exc:  # noqa: BLE001 -- collected and re-raised below
                errors.append(exc)
        if errors:
            raise errors[0]
