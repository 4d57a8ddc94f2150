"""The brokers chaoskit can test: its own (`chaoskit`, the default) and any a plugin adds through
`chaoskit_add_brokers` (the built-in plugin adds `tansu`; chaoskit.pluginmanager.broker_kind finds
one by name).

A `BrokerKind` says what a broker is called in reports, which capabilities it has beyond the
Kafka core (chaoskit.cluster.capabilities), which storage engines it runs on, whether it can start
on this machine, and builds its cluster. Suites, faults and explore steps ask it by capability.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from chaoskit.cluster import capabilities as caps

DEFAULT = "chaoskit"


@dataclass(frozen=True)
class BrokerKind:
    name: str  # as --chaos-broker / --broker name it
    title: str  # as reports and skip reasons name it ("tansu 0.6.0")
    capabilities: frozenset[str]
    new_cluster: Callable[..., Any]  # (backend, spec, test) -> an unstarted Cluster (chaoskit.roles.Cluster)
    storages: tuple[str, ...] = ()  # storage engines, the default first; () for a broker with its own logs
    # what a storage engine adds ({"postgres": {STORAGE}}: a server of its own that faults reach)
    storage_capabilities: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # (storage) -> None when it can start here on that engine, else the one line that says what to do
    # ("run `make tansu`", "apt-get install -y postgresql")
    unavailable: Callable[[str | None], str | None] = field(default=lambda storage: None)
    max_brokers: Callable[[str | None], int] = field(default=lambda storage: 1 << 30)
    backends: tuple[str, ...] = ("local", "docker")  # where its nodes can run

    def runs_on(self, backend: str) -> str | None:
        """Why it cannot run on `backend`, or None."""
        if backend in self.backends:
            return None
        return f"{self.title} runs on the {' or '.join(self.backends)} backend, not {backend}"

    def __post_init__(self) -> None:
        caps.checked(self.capabilities)
        for more in self.storage_capabilities.values():
            caps.checked(more)

    def has(self, storage: str | None = None) -> frozenset[str]:
        """Its capabilities on `storage` (the default engine when None)."""
        engine = self.storage(storage)
        return self.capabilities | self.storage_capabilities.get(engine or "", frozenset())

    def lacking(self, needs: Any, storage: str | None = None) -> str | None:
        """Why this broker (on `storage`) cannot run what needs these capabilities, or None."""
        engine = self.storage(storage)
        missing = caps.checked(needs) - self.has(storage)
        # named with its engine when another engine would have what is missing
        other = any(missing & more for more in self.storage_capabilities.values())
        return caps.lacking(f"{self.title} over {engine}" if other else self.title, self.has(storage), needs)

    def fitted(self, storage: str | None, asked: int) -> int:
        """The broker count a run gets: as asked, up to what the storage engine serves."""
        return max(1, min(asked, self.max_brokers(storage)))

    def refusal(self, needs: Any = (), backend: str = "local", storage: str | None = None) -> str | None:
        """Why a test needing these capabilities, on `backend` and `storage`, cannot run on this broker
        here (it lacks one, runs elsewhere, or is not installed), or None."""
        return self.lacking(needs, storage) or self.runs_on(backend) or self.unavailable(self.storage(storage))

    def storage(self, asked: str | None) -> str | None:
        """The storage engine to run on (the default when none is asked); ValueError for one it lacks."""
        if not self.storages:
            if asked:
                raise ValueError(f"{self.title} keeps its own logs: it takes no storage engine (asked for {asked!r})")
            return None
        if asked is None:
            return self.storages[0]
        if asked not in self.storages:
            raise ValueError(f"{self.title} runs on {', '.join(self.storages)}, not {asked!r}")
        return asked


def _own_cluster(backend: str, spec: Any, test: Any = None) -> Any:
    from chaoskit.cluster.backends import new_cluster
    return new_cluster(backend, spec)


def own_broker() -> BrokerKind:
    """chaoskit's own broker and controllers on ZooKeeper: every capability."""
    return BrokerKind(DEFAULT, "chaoskit", caps.OWN, _own_cluster)
