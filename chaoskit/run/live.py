"""Run: the run in progress, the one `test` every role method gets (chaoskit.roles.LiveRun).

Jepsen hands its clients, nemeses and checkers the same test map; so does chaoskit: the run's
data (`test`, a ChaosTest), its id and folder, the cluster once it is up, the clients once they
are open and the history's `record` once it records. Faults also find here what they act on:
the proxied paths (`router`, `links`), the one `cutter` all of a run's network faults share (so
overlapping cuts of one link heal right), nodes by name and target specs resolved now.

    run = Run.around(cluster)            # a bare cluster (tests, the nemesis fixture)
    fault.setup(run); fault.invoke(run, fault_op("start", window))
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from chaoskit.cluster.topology import Link, ProxiedRouter
from chaoskit.history.schema import Op
from chaoskit.nemesis.base import cluster_links, proxied_router, shared_cutter
from chaoskit.nemesis.link_sets import LinkCutter
from chaoskit.nemesis.resolve import node_by_name, resolve
from chaoskit.roles import Client, Cluster


class Run:
    def __init__(self, test: Any, run_id: str, run_dir: Path | None, cluster: Cluster | None = None,
                 clients: list[Client] | None = None, record: Callable[[Op], Any] | None = None,
                 seed: int | None = None) -> None:
        self.test, self.run_id, self.run_dir = test, run_id, run_dir
        self.seed = seed if seed is not None else getattr(test, "seed", 0)
        self.group_id = test.group_id if test is not None else "chaoskit"
        self.cluster: Cluster = cluster  # type: ignore[assignment]  # set once the cluster is up
        self.clients: list[Client] = list(clients or [])
        self.record = record
        self._cutter: LinkCutter | None = None

    @classmethod
    def around(cls, cluster: Cluster, clients: list[Client] | None = None,
               record: Callable[[Op], Any] | None = None) -> Run:
        """A run of no test around a cluster that is already up: faults and clients on their own."""
        spec = getattr(cluster, "spec", None)
        return cls(None, cluster.run_id, getattr(spec, "run_dir", None), cluster, clients, record,
                   seed=getattr(spec, "seed", 0))

    # --- what faults use ---------------------------------------------------------------------------
    @property
    def router(self) -> ProxiedRouter:
        return proxied_router(self.cluster)

    @property
    def links(self) -> list[Link]:
        return cluster_links(self.cluster)

    @property
    def cutter(self) -> LinkCutter:
        if self._cutter is None:
            self._cutter = shared_cutter(self.cluster)
        return self._cutter

    def node(self, name: str) -> Any:
        return node_by_name(self.cluster, name)

    def resolve(self, target: str, pick: int) -> str:
        return resolve(target, self.cluster, pick, self.group_id)

    def __repr__(self) -> str:
        return f"Run({self.run_id}, test={getattr(self.test, 'name', None)!r})"
