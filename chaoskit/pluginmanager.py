"""Loads chaoskit plugins from the `chaoskit` entry-point group and merges what they add."""
from __future__ import annotations

from typing import Any, Callable

import pluggy

from chaoskit import hookspecs

KINDS = ("faults", "workloads", "clients", "checks")


class PluginConflict(RuntimeError):
    """Two plugins registered the same name for the same kind."""


def get_plugin_manager(load_entry_points: bool = True) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    if load_entry_points:
        pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    return pm


def collect(pm: pluggy.PluginManager, kind: str) -> dict[str, Callable[..., Any]]:
    """Merge every plugin's `chaoskit_add_<kind>` answer into one name -> factory map."""
    if kind not in KINDS:
        raise ValueError(f"unknown plugin kind {kind!r}; expected one of {', '.join(KINDS)}")
    hook = getattr(pm.hook, f"chaoskit_add_{kind}")
    merged: dict[str, Callable[..., Any]] = {}
    owners: dict[str, str] = {}
    # each impl is called on its own so that a conflict can name both plugins
    for impl in hook.get_hookimpls():
        for name, factory in (impl.function() or {}).items():
            if name in merged:
                raise PluginConflict(
                    f"{kind[:-1]} {name!r} is registered by both {owners[name]} and {impl.plugin_name}; "
                    "rename one of them or uninstall a plugin"
                )
            merged[name] = factory
            owners[name] = impl.plugin_name
    return merged
