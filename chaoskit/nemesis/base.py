"""What the fault packs build on: the run's network paths as faults see them, and a windowed
fault base class.

A nemesis gets the live run (chaoskit.roles.LiveRun) in `setup(test)`, `invoke(test, op)` and
`teardown(test)`: the cluster (local or docker backend: brokers, controllers, ZooKeeper,
`partition_state`, `leader_of`, `active_controller`), the workload's clients (for client-side
faults), the history's `record` (for the admin fault's own ops), and for network faults the
proxied `router`, its `links` and one `cutter` shared by every fault of the run, so overlapping
cuts of one link heal right; `node(name)` and `resolve(target, pick)` name the nodes. The
functions here are what chaoskit.run.live.Run answers those with.

`WindowedFault` turns the executor's start/stop ops into `start(target, params, pick) -> state`
and `stop(state) -> result`, keeping each open window's state by window id, so overlapping
windows of one fault never undo each other, and `teardown` heals whatever is still open.
The state (JSON-able) is what the history records as the op's `resolved`.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from chaoskit.cluster.topology import Link, ProxiedRouter
from chaoskit.history.schema import Op
from chaoskit.nemesis.link_sets import LinkCutter
from chaoskit.nemesis.ops import START, STOP, with_resolved
from chaoskit.roles import LiveRun

log = logging.getLogger("chaoskit.nemesis")


class NeedsProxies(RuntimeError):
    """A network fault on a cluster whose paths do not go through proxies."""


def proxied_router(cluster: Any) -> ProxiedRouter:
    """The cluster's per-path proxies; NeedsProxies when its paths do not go through any."""
    router = getattr(cluster, "router", None)
    if not isinstance(router, ProxiedRouter):
        raise NeedsProxies("this fault cuts or slows network paths, so the cluster must be proxied: "
                           "start it with ClusterSpec(proxied=True) or `chaoskit cluster up --proxied`")
    return router


def shared_cutter(cluster: Any) -> LinkCutter:
    """A LinkCutter over the cluster's proxies (a run keeps one for all its faults)."""
    return LinkCutter(proxied_router(cluster).proxies)


def cluster_links(cluster: Any) -> list[Link]:
    return list(proxied_router(cluster).links.values())


class WindowedFault:
    """Base of the built-in faults; a subclass sets `name` and gives start and stop."""

    name = "fault"
    # what of the broker beyond Kafka's core the fault needs (chaoskit.cluster.capabilities): a run
    # on a broker without it is refused before anything starts, and explore never draws it there
    needs: frozenset[str] = frozenset()
    # the methods the run's client must have (a stock client lacks the ordered client's hooks):
    # explore never draws the fault for a client without them
    client_needs: tuple[str, ...] = ()

    def __init__(self, **options: Any) -> None:
        self.options = options  # defaults for every window's params
        self.ctx: LiveRun | None = None
        self._open: dict[int, dict[str, Any]] = {}

    # --- the Nemesis protocol ------------------------------------------------------------------
    def setup(self, test: LiveRun) -> None:
        self.ctx = test

    def invoke(self, test: LiveRun, op: Op) -> Op:
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

    def teardown(self, test: LiveRun) -> None:
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
    def context(self) -> LiveRun:
        """The run this fault acts on (given to setup)."""
        if self.ctx is None:
            raise RuntimeError(f"{self.name}: setup(test) was not called before invoke")
        return self.ctx

    def record(self, op: dict[str, Any]) -> None:
        """A fault's own op (an admin change it made, say) into the run's history, when one is recorded."""
        if self.context.record is not None:
            self.context.record(op)

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        raise NotImplementedError

    def stop(self, state: dict[str, Any]) -> dict[str, Any] | None:
        raise NotImplementedError


def check_params(fault: str, params: Mapping[str, Any], allowed: set[str]) -> None:
    """Refuse a param the fault does not know, naming the ones it does."""
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(f"{fault}: unknown param(s) {', '.join(unknown)}; it takes {', '.join(sorted(allowed)) or 'none'}")
