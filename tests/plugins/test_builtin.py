"""The built-in plugin registers through the same entry-point group a third party uses."""
from __future__ import annotations

from importlib.metadata import entry_points


def test_builtin_is_in_the_chaoskit_group():
    eps = {ep.name: ep.value for ep in entry_points(group="chaoskit")}
    assert eps.get("builtin") == "chaoskit_plugins.builtin"


def test_plugins_folder_imports_as_chaoskit_plugins():
    import chaoskit_plugins
    import chaoskit_plugins.builtin as builtin

    assert chaoskit_plugins.__file__.replace("\\", "/").endswith("plugins/__init__.py")
    assert builtin.__doc__
