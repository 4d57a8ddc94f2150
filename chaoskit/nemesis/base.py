"""What the fault packs build on: the context a fault acts in, and a windowed fault base class.

`FaultContext` is what a nemesis gets in `setup(test)`: the cluster (local or docker backend:
brokers, controllers, ZooKeeper, `partition_state`, `leader_of`, `active_controller`, and for
network faults `router.links` and `proxies`), the workload's clients (for client-side faults),
the history's `record` (for the admin fault's own ops) and one `LinkCutter` shared by every network fault, so overlapping cuts of one link heal right.

`WindowedFault` turns the executor's start/stop ops into `start(target, params, pick) -> state`
and `stop(state) -> result`, keeping each open window's state by window id, so overlapping
windows of one fault never undo each other, and `teardown` heals whatever is still open.
The state (JSON-able) is what the history records as the op's `resolved`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from chaoskit.cluster.topology import Link, ProxiedRouter
from chaoskit.nemesis.link_sets import LinkCutter
from chaoskit.nemesis.protocol import START, STOP, Op, with_resolved
from chaoskit.nemesis.resolve import node_by_name, resolve

log = logging.getLogger("chaoskit.nemesis")


class NeedsProxies(RuntimeError):
    """A network fault on a cluster whose paths do not go through proxies."""


@dataclass
class FaultContext:
    cluster: Any
    clients: list[Any] = field(default_factory=list)
    record: Callable[[Op], Any] | None = None  # the history, for faults that also act as clients (admin)
    _cutter: LinkCutter | None = field(default=None, repr=False)

    @classmethod
    def of(cls, test: Any) -> FaultContext:
        """The context in `test`: a FaultContext itself, or one kept on a test object with `.cluster`."""
        if isinstance(test, FaultContext):
            return test
        ctx = getattr(test, "fault_context", None)
        if ctx is None:
            ctx = cls(test.cluster, list(getattr(test, "clients", []) or []), getattr(test, "record", None))
            test.fault_context = ctx
        return ctx

    @property
    def router(self) -> ProxiedRouter:
        router = getattr(self.cluster, "router", None)
        if not isinstance(router, ProxiedRouter):
            raise NeedsProxies("this fault cuts or slows network paths, so the cluster must be proxied: "
                               "start it with ClusterSpec(proxied=True) or `chaoskit cluster up --proxied`")
        return router

    @property
    def links(self) -> list[Link]:
        return list(self.router.links.values())

    @property
    def cutter(self) -> LinkCutter:
        if self._cutter is None:
            self._cutter = LinkCutter(self.router.proxies)
        return self._cutter

    def node(self, name: str) -> Any:
        return node_by_name(self.cluster, name)

    def resolve(self, target: str, pick: int) -> str:
        return resolve(target, self.cluster, pick)


class WindowedFault:
    """Base of the built-in faults; a subclass sets `name` and gives start and stop."""

    name = "fault"

    def __init__(self, **options: Any) -> None:
        self.options = options  # defaults for every window's params
        self.ctx: FaultContext | None = None
        self._open: dict[int, dict[str, Any]] = {}

    # --- the Nemesis protocol ------------------------------------------------------------------
    def setup(self, test: Any) -> None:
        self.ctx = FaultContext.of(test)

    def invoke(self, op: Op) -> Op:
        value = op["value"]
        window = value["window"]
        if op["f"] == START:
            state = self.start(value["target"], {**self.options, **value.get("params", {})}, value.get("pick", 0))
            self._open[window] = state
            return with_resolved(op, state)
        if op["f"] == STOP:
            state = self._open.pop(window, None)
            if state is None:
                return with_resolved(op, None)  # its start failed before anything was done
            return with_resolved(op, self.stop(state) or state)
        raise ValueError(f"a nemesis op's f is {START!r} or {STOP!r}, got {op['f']!r}")

    def teardown(self, test: Any) -> None:
        errors = []
        for window in reversed(list(self._open)):
            try:
                self.stop(self._open.pop(window))
            except Exception as exc:  # noqa: BLE001 -- heal the rest, then report the first
                log.error("%s: healing window %s failed: %r", self.name, window, exc)
                errors.append(exc)
        if errors:
            raise errors[0]

    # --- what a fault does ---------------------------------------------------------------------
    @property
    def context(self) -> FaultContext:
        if self.ctx is None:
            raise RuntimeError(f"{self.name}: setup(test) was not called before invoke")
        return self.ctx

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        raise NotImplementedError

    def stop(self, state: dict[str, Any]) -> dict[str, Any] | None:
        raise NotImplementedError


def check_params(fault: str, params: Mapping[str, Any], allowed: set[str]) -> None:
    """Refuse a param the fault does not know, naming the ones it does."""
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(f"{fault}: unknown param(s) {', '.join(unknown)}; it takes {', '.join(sorted(allowed)) or 'none'}")
