"""Extension points: pluggy hookspecs, each prefixed `chaoskit_`.

A plugin is any module registered in the `chaoskit` entry-point group that
implements some of these with `@chaoskit.hookspecs.hookimpl`. The built-ins in
plugins/ register the same way a third party does.

The `chaoskit_add_*` hooks return a mapping of name -> factory; the manager
merges them and refuses two plugins claiming one name.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import pluggy

PROJECT = "chaoskit"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Factories = Mapping[str, Callable[..., Any]]


@hookspec
def chaoskit_add_faults() -> Factories:
    """Fault factories by name; each builds a Nemesis from keyword options."""


@hookspec
def chaoskit_add_workloads() -> Factories:
    """Workload factories by name; each builds a seeded Generator."""


@hookspec
def chaoskit_add_clients() -> Factories:
    """Client factories by name (ordered, kafka-python, librdkafka, ...)."""


@hookspec
def chaoskit_add_checks() -> Factories:
    """Checker factories by name; each builds a Checker."""


@hookspec
def chaoskit_run_start(run: Any) -> None:
    """Called once a run's cluster is up, before workload and faults begin."""


@hookspec
def chaoskit_run_end(run: Any, result: Any) -> None:
    """Called after the checks, with the run and its result, however it ended."""
