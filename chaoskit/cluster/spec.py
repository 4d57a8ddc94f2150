"""ClusterSpec: what cluster to run (node counts, patch profile, configs, run id and dir) and the
Router that says which address each node uses to reach each other node.

Profiles map DESIGN.md §3's proposals onto config keys. `patched` turns every proposal on;
`unpatched` behaves like ZooKeeper-era Kafka before them (no ordered delivery, no epoch fencing,
no partition deletion, no internal-topic guardrail). Config precedence, lowest first: generated
(ports, dirs, addresses) < profile < role-wide settings < per-node overrides.
"""
from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

Profile = Literal["patched", "unpatched"]
PROFILES: tuple[str, ...] = ("patched", "unpatched")
BACKENDS: tuple[str, ...] = ("local", "docker")  # chaoskit.cluster.backends starts them
Address = tuple[str, int]

# role -> profile -> config keys
PROFILE_CONFIG: dict[str, dict[str, dict[str, Any]]] = {
    "broker": {
        "patched": {"ordered.delivery.enable": True, "leader.epoch.fencing.enable": True,
                    "delete.topic.partition.enable": True},
        "unpatched": {"ordered.delivery.enable": False, "leader.epoch.fencing.enable": False,
                      "delete.topic.partition.enable": False},
    },
    "controller": {
        "patched": {"ordered.delivery.enable": True, "delete.topic.partition.enable": True,
                    "delete.topic.partition.interval.delay.ms": 1000,
                    "controller.unstable.allow.internal.coordinator.partition.increase": False},
        "unpatched": {"ordered.delivery.enable": False, "delete.topic.partition.enable": False,
                      "delete.topic.partition.interval.delay.ms": 1000,
                      "controller.unstable.allow.internal.coordinator.partition.increase": True},
    },
}

_runs = itertools.count(1)


def host_port(address: Address) -> str:
    """("h", 9092) -> "h:9092", as configs and proxies take addresses."""
    return "%s:%d" % address


def new_run_id() -> str:
    """Unique on this machine without drawing randomness: time, process id and a counter."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(_runs)}"


class Router(Protocol):
    """Which address `source` uses to reach `target` (node names such as "broker-1",
    "controller-1", "zookeeper-1"; "client" for the clients). The fault-proxy work returns a proxy's
    address here, one per path; `real` is where the target actually listens."""

    def address(self, source: str, target: str, real: Address) -> Address: ...


class DirectRouter:
    """No proxies: everyone reaches everyone at its real address."""

    def address(self, source: str, target: str, real: Address) -> Address:
        return real


@dataclass
class ClusterSpec:
    brokers: int = 3
    controllers: int = 1
    zookeepers: int = 1
    profile: str = "patched"
    broker_config: dict[str, Any] = field(default_factory=dict)      # every broker
    controller_config: dict[str, Any] = field(default_factory=dict)  # every controller
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # node name -> keys
    run_id: str = field(default_factory=new_run_id)
    run_dir: Path | None = None  # default reports/runs/<run id>
    host: str = "127.0.0.1"
    router: Router = field(default_factory=DirectRouter)
    ready_timeout: float = 60.0
    # every path through its own fault proxy (chaoskit.cluster.topology); our proxy server is
    # started with the cluster unless proxy_url names a running Toxiproxy API to use instead
    proxied: bool = False
    proxy_url: str | None = None
    seed: int = 0  # the proxy's random draws (toxicity, jitter, slices)

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"profile {self.profile!r} is not one of {', '.join(PROFILES)}")
        for what, n, lo in (("brokers", self.brokers, 1), ("controllers", self.controllers, 1),
                            ("zookeepers", self.zookeepers, 1)):
            if not isinstance(n, int) or n < lo:
                raise ValueError(f"{what} must be an integer >= {lo}, got {n!r}")
        if self.zookeepers % 2 == 0:
            raise ValueError(f"zookeepers must be odd (1, 3, 5) for a quorum, got {self.zookeepers}")
        if not self.host.startswith("127."):
            raise ValueError(f"host {self.host!r}: only loopback addresses (127.0.0.0/8) are allowed")
        known = {f"broker-{i}" for i in range(1, self.brokers + 1)} | \
                {f"controller-{i}" for i in range(1, self.controllers + 1)}
        unknown = sorted(set(self.overrides) - known)
        if unknown:
            raise ValueError(f"overrides for unknown node(s) {', '.join(unknown)}; nodes are {', '.join(sorted(known))}")
        if self.proxy_url is not None and not self.proxied:
            raise ValueError("proxy_url is only used with proxied=True")
        if self.proxied and not isinstance(self.router, DirectRouter):
            raise ValueError("proxied=True makes its own router; give either a router or proxied, not both")
        # absolute: nodes run with their own working directories, and a relative path would move with them
        self.run_dir = (Path(self.run_dir) if self.run_dir is not None else Path("reports") / "runs" / self.run_id).resolve()

    @property
    def directory(self) -> Path:
        assert self.run_dir is not None
        return self.run_dir

    def config_for(self, role: str, name: str, generated: dict[str, Any]) -> dict[str, Any]:
        """A node's config: generated < profile < role-wide < per-node."""
        role_wide = self.broker_config if role == "broker" else self.controller_config
        return {**generated, **PROFILE_CONFIG[role][self.profile], **role_wide, **self.overrides.get(name, {})}
