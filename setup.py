"""Maps the plugins/ folder onto the import name chaoskit_plugins.

pyproject.toml holds all metadata; setuptools' static config cannot rename a
folder's subpackages, so the package list is computed here.
"""
from setuptools import find_packages, setup

core = find_packages(include=["chaoskit", "chaoskit.*"])
plugins = ["chaoskit_plugins" + name[len("plugins"):] for name in find_packages(include=["plugins", "plugins.*"])]

setup(
    packages=core + plugins,
    package_dir={"chaoskit": "chaoskit", "chaoskit_plugins": "plugins"},
    package_data={"chaoskit": ["py.typed"], "chaoskit.protocol.schemas": ["*.json"]},
)
