"""Loads chaoskit plugins from the `chaoskit` entry-point group and merges what they add, looks a
part up by kind and name (the one place that does), and lists them (`chaoskit plugins`)."""
from __future__ import annotations

import argparse
import json
from typing import Any, Callable

import pluggy

from chaoskit import hookspecs

KINDS = ("faults", "workloads", "clients", "checks", "steps", "brokers")


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


def lookup(kind: str, name: str, pm: pluggy.PluginManager | None = None) -> Callable[..., Any]:
    """The factory a plugin registered as `name`; ValueError naming what is installed when none did."""
    return lookup_all(kind, [name], pm)[name]


def lookup_all(kind: str, names: list[str], pm: pluggy.PluginManager | None = None) -> dict[str, Callable[..., Any]]:
    """The factories registered as `names`, in order; one ValueError naming every unknown one."""
    factories = collect(pm or get_plugin_manager(), kind)
    unknown = [n for n in names if n not in factories]
    if unknown:
        raise ValueError(f"no {kind[:-1]} named {', '.join(map(repr, unknown))}; "
                         f"installed: {', '.join(sorted(factories)) or 'none'}")
    return {n: factories[n] for n in names}


def broker_kind(name: str | None, pm: pluggy.PluginManager | None = None) -> Any:
    """The broker registered as `name` (chaoskit's own when None): a chaoskit.cluster.brokers.BrokerKind;
    ValueError naming the installed ones."""
    from chaoskit.cluster.brokers import DEFAULT

    return lookup("brokers", name or DEFAULT, pm)()


def broker_names(pm: pluggy.PluginManager | None = None) -> list[str]:
    return sorted(collect(pm or get_plugin_manager(), "brokers"))


# --- `chaoskit plugins` ----------------------------------------------------------------------------
def register(sub: Any) -> None:
    p = sub.add_parser("plugins", help="list installed plugins and the faults, workloads, clients and checks they add")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=plugins_command)


def plugins_command(args: argparse.Namespace) -> int:
    pm = get_plugin_manager()
    listing = {
        "plugins": sorted(name for name, _ in pm.list_name_plugin()),
        **{kind: sorted(collect(pm, kind)) for kind in KINDS},
    }
    if args.json:
        print(json.dumps(listing, indent=2))
        return 0
    for key, names in listing.items():
        print(f"{key:10} {', '.join(names) if names else '(none)'}")
    return 0
