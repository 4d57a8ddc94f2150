"""chaoskit: chaos testing for Kafka's ordering guarantees.

A patched broker and controller cluster on real ZooKeeper, faults through
Toxiproxy's API, an ordered-delivery client, histories checked on Spark, and
a pytest plugin that composes them. docs/ARCHITECTURE.md says which file
holds what; the public API is re-exported here as the parts land.
"""
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("chaoskit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

from chaoskit.pluginmanager import get_plugin_manager  # noqa: E402

__all__ = ["__version__", "get_plugin_manager"]
