"""Extension points: pluggy hookspecs, each prefixed `chaoskit_`.

A plugin is any module registered in the `chaoskit` entry-point group that
implements some of these with `@chaoskit.hookspecs.hookimpl`. The built-ins in
plugins/ register the same way a third party does.

The `chaoskit_add_*` hooks return a mapping of name -> factory; the manager
merges them and refuses two plugins claiming one name. The roles the factories
build are the protocols of chaoskit/roles.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import pluggy

if TYPE_CHECKING:
    from chaoskit.roles import LiveRun

PROJECT = "chaoskit"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Factories = Mapping[str, Callable[..., Any]]


@hookspec
def chaoskit_add_faults() -> Factories:
    """Fault factories by name; each builds a Nemesis (keyword options: defaults of every window's params)."""


@hookspec
def chaoskit_add_workloads() -> Factories:
    """Workload factories by name; each builds a seeded Workload from `seed`, `duration_s`, `topic`
    and the test's workload options, as keywords."""


@hookspec
def chaoskit_add_clients() -> Factories:
    """Client factories by name (ordered, kafka-python, librdkafka, ...); each builds a Client from the
    test's client options, as keywords."""


@hookspec
def chaoskit_add_checks() -> Factories:
    """Check factories by name; each builds a Checker from the check settings, as keywords
    (`engine`, `spark_master`, `model`, `budget_s`: take `**settings` and ignore what you do not use)."""


@hookspec
def chaoskit_add_steps() -> Factories:
    """How `chaoskit explore` draws the steps of faults: {fault name: StepKind}
    (chaoskit.explore.grammar: its targets, params and when it is valid). A fault without one is
    still explored, with a broker or controller target and its default params."""


@hookspec
def chaoskit_add_brokers() -> Factories:
    """Brokers by name, each factory taking no arguments and returning a
    chaoskit.cluster.brokers.BrokerKind (its title, capabilities, storage engines and cluster)."""


@hookspec
def chaoskit_run_start(run: LiveRun) -> None:
    """Called once a run's cluster is up, before workload and faults begin."""


@hookspec
def chaoskit_run_end(run: LiveRun, result: Any) -> None:
    """Called after the checks, with the run and its result (a `chaoskit.RunResult`: the run engine
    stands above the hooks it calls, so it is not named here), however it ended."""
