"""ControllerConfig: the controller's JSON config file (docs/internals.md §1), validated key by key.

The value parsers are chaoskit.protocol.node_config's, shared with the broker, so both processes
accept and refuse exactly the same spellings; an unknown key or a bad value raises ConfigError
naming the key.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit.controller.failpoints import FAILPOINTS
from chaoskit.protocol.mutations import CONTROLLER, mutation_names
from chaoskit.protocol.node_config import (MAX_MS, REQUIRED, Spec, load_config_file, parse_bool, parse_int, parse_names,
                                           parse_peers, parse_spec, parse_zk_connect)

SPEC: Spec = {
    "controller.id": ("controller_id", parse_int(0), REQUIRED),
    "zookeeper.connect": ("zookeeper_connect", parse_zk_connect, REQUIRED),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", parse_int(1000, MAX_MS), 6000),
    "broker.addresses": ("broker_addresses", parse_peers, {}),
    "controller.request.timeout.ms": ("request_timeout_ms", parse_int(1, MAX_MS), 5000),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", parse_bool, False),
    "ordered.delivery.enable": ("ordered_delivery_enable", parse_bool, True),
    "delete.topic.partition.enable": ("delete_topic_partition_enable", parse_bool, True),
    "delete.topic.partition.interval.delay.ms":
        ("delete_topic_partition_interval_delay_ms", parse_int(0, MAX_MS), 300000),
    "controller.unstable.allow.internal.coordinator.partition.increase":
        ("allow_internal_partition_increase", parse_bool, False),
    "controller.failpoints": ("failpoints", parse_names(FAILPOINTS, "failpoint"), frozenset()),
    "mutations": ("mutations", parse_names(mutation_names(CONTROLLER), "mutation"), frozenset()),
}


@dataclass(frozen=True)
class ControllerConfig:
    controller_id: int
    zookeeper_connect: str
    zookeeper_session_timeout_ms: int = 6000
    broker_addresses: dict[int, tuple[str, int]] = field(default_factory=dict)
    request_timeout_ms: int = 5000
    unclean_leader_election_enable: bool = False
    ordered_delivery_enable: bool = True
    delete_topic_partition_enable: bool = True
    delete_topic_partition_interval_delay_ms: int = 300000  # KIP-694: 5 minutes
    allow_internal_partition_increase: bool = False
    failpoints: frozenset[str] = frozenset()
    mutations: frozenset[str] = frozenset()  # elements turned off for `chaoskit mutate` (protocol/mutations.py)

    @classmethod
    def from_dict(cls, raw: Any) -> ControllerConfig:
        values = parse_spec(raw, SPEC)
        if "guardrail" in values["mutations"]:  # KAFKA-20029 turned off: as if the unstable switch were on
            values["allow_internal_partition_increase"] = True
        return cls(**values)

    @classmethod
    def load(cls, path: str | Path) -> ControllerConfig:
        return load_config_file(path, cls.from_dict)

    def broker_address(self, broker_id: int, registered: tuple[str, int]) -> tuple[str, int]:
        """How this controller reaches a broker: its broker.addresses entry, else the registered listener."""
        return self.broker_addresses.get(broker_id, registered)
