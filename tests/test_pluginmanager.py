"""The plugin manager loads the `chaoskit` entry-point group and merges what plugins add."""
from __future__ import annotations

import types

import pytest

from chaoskit.hookspecs import hookimpl
from chaoskit.pluginmanager import PluginConflict, collect, get_plugin_manager


def plugin(name: str, **checks):
    mod = types.ModuleType(name)

    @hookimpl
    def chaoskit_add_checks():
        return checks

    mod.chaoskit_add_checks = chaoskit_add_checks
    return mod


def test_builtin_plugin_comes_from_the_entry_point_group():
    pm = get_plugin_manager()
    assert pm.get_plugin("builtin") is not None
    assert pm.get_plugin("builtin").__name__ == "chaoskit_plugins.builtin"


def test_collect_merges_plugins():
    pm = get_plugin_manager(load_entry_points=False)
    pm.register(plugin("a", one=int), name="a")
    pm.register(plugin("b", two=str), name="b")
    assert collect(pm, "checks") == {"one": int, "two": str}


def test_collect_refuses_a_name_claimed_twice():
    pm = get_plugin_manager(load_entry_points=False)
    pm.register(plugin("a", same=int), name="a")
    pm.register(plugin("b", same=str), name="b")
    with pytest.raises(PluginConflict, match="'same'.*both"):
        collect(pm, "checks")


def test_collect_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="unknown plugin kind"):
        collect(get_plugin_manager(load_entry_points=False), "gadgets")
