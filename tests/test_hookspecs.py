"""The hookspecs (chaoskit.hookspecs): every hook is prefixed chaoskit_, and the built-in plugin's
implementations match them (pluggy refuses an implementation whose arguments a spec lacks)."""
from __future__ import annotations

import types

import pytest
from pluggy import PluginValidationError

from chaoskit import hookspecs
from chaoskit.pluginmanager import KINDS, get_plugin_manager


def test_every_hook_is_prefixed_and_every_kind_has_its_add_hook():
    hooks = {name for name in vars(hookspecs) if name.startswith("chaoskit_")}
    assert {f"chaoskit_add_{kind}" for kind in KINDS} | {"chaoskit_run_start", "chaoskit_run_end"} == hooks


def test_the_built_in_plugin_implements_every_add_hook_and_validates():
    pm = get_plugin_manager()
    pm.check_pending()  # an implementation of no known hook would be pending
    builtin = pm.get_plugin("builtin")
    assert all(hasattr(builtin, f"chaoskit_add_{kind}") for kind in KINDS)


def test_an_implementation_with_arguments_its_spec_lacks_is_refused():
    mod = types.ModuleType("bad")

    @hookspecs.hookimpl
    def chaoskit_run_start(run, cluster):
        pass

    mod.chaoskit_run_start = chaoskit_run_start
    with pytest.raises(PluginValidationError, match="cluster"):
        get_plugin_manager(load_entry_points=False).register(mod, name="bad")
