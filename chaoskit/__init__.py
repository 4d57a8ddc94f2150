"""chaoskit: chaos testing for Kafka's ordering guarantees.

A patched broker and controller cluster on real ZooKeeper, faults through Toxiproxy's API, an
ordered-delivery client, histories checked on Spark, and a pytest plugin that composes them.
docs/ARCHITECTURE.md says which file holds what. The public API, flat:

    from chaoskit import ChaosTest, Topic, run, mix, admin_step

and the roles a plugin implements (Client, Workload, Nemesis, Fault, Checker, Cluster, their no-ops).
Names load on first use, so the broker, controller and proxy processes (which import chaoskit's
packages) never pay for the run and its dependencies.
"""
from importlib import import_module
from typing import Any

from chaoskit.protocol.version import VERSION as __version__

_PUBLIC = {
    "ChaosTest": "chaoskit.run.chaostest", "Topic": "chaoskit.run.chaostest", "RunResult": "chaoskit.run.chaostest",
    "run": "chaoskit.run", "Run": "chaoskit.run.live",
    "mix": "chaoskit.run.mixes", "admin_step": "chaoskit.run.mixes",
    "CheckResult": "chaoskit.checkers.result", "History": "chaoskit.history.reader",
    "get_plugin_manager": "chaoskit.pluginmanager",
    **{name: "chaoskit.roles" for name in ("Client", "Workload", "Nemesis", "Fault", "Checker", "Cluster",
                                           "LiveRun", "NoopClient", "NoopWorkload", "NoopNemesis", "NoopChecker",
                                           "PENDING", "Pending", "new_seed")},
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        module = import_module(_PUBLIC[name])
        # `run` is the package chaoskit/run/ itself, which runs a test when called (run/__init__.py says why)
        value = module if _PUBLIC[name] == f"{__name__}.{name}" else getattr(module, name)
        globals()[name] = value  # once loaded, a plain attribute
        return value
    raise AttributeError(f"module 'chaoskit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
