"""BrokerConfig: the broker's JSON config file (docs/internals.md §1), validated key by key.

An unknown key or a bad value raises ConfigError naming the key, what was given and what is
allowed; `python -m chaoskit.broker` prints it and exits with code 2. The value parsers are
chaoskit.protocol.node_config's, shared with the controller.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit.protocol.mutations import BROKER, mutation_names
from chaoskit.protocol.node_config import (MAX_MS, REQUIRED, ConfigError, Spec, parse_address, parse_bool, parse_int,
                                           load_config_file, parse_names, parse_peers, parse_spec, parse_str,
                                           parse_zk_connect)
from chaoskit.protocol.topics import CLEANUP_POLICIES


def parse_cleanup_policy(key: str, value: Any) -> str:
    """Kafka's cleanup.policy list: delete, compact, or both comma-separated."""
    policies = {p.strip() for p in parse_str(key, value).split(",")}
    if not policies <= CLEANUP_POLICIES:
        raise ConfigError(f"{key}: expected delete, compact or compact,delete, got {value!r}")
    return value

SPEC: Spec = {
    "broker.id": ("broker_id", parse_int(0), REQUIRED),
    "listeners": ("listener", parse_address, REQUIRED),
    "advertised.listeners": ("advertised", parse_address, None),
    "log.dirs": ("log_dir", parse_str, REQUIRED),
    "zookeeper.connect": ("zookeeper_connect", parse_zk_connect, REQUIRED),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", parse_int(1000, MAX_MS), 6000),
    "peer.addresses": ("peer_addresses", parse_peers, {}),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", parse_int(1, MAX_MS), 10000),
    "replica.fetch.wait.max.ms": ("replica_fetch_wait_max_ms", parse_int(0, MAX_MS), 500),
    "replica.fetch.max.bytes": ("replica_fetch_max_bytes", parse_int(1024), 1048576),
    "socket.request.max.bytes": ("socket_request_max_bytes", parse_int(1024), 104857600),
    "min.insync.replicas": ("min_insync_replicas", parse_int(1), 1),
    "default.replication.factor": ("default_replication_factor", parse_int(1, 32767), 1),
    "num.partitions": ("num_partitions", parse_int(1), 1),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", parse_int(1), 5),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", parse_int(1, 32767), None),
    "transaction.state.log.num.partitions": ("transaction_state_log_num_partitions", parse_int(1), 50),
    "share.coordinator.state.topic.num.partitions": ("share_coordinator_state_topic_num_partitions", parse_int(1), 50),
    "auto.create.topics.enable": ("auto_create_topics_enable", parse_bool, False),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", parse_bool, False),
    "leader.epoch.fencing.enable": ("leader_epoch_fencing_enable", parse_bool, True),
    "ordered.delivery.enable": ("ordered_delivery_enable", parse_bool, True),
    "delete.topic.partition.enable": ("delete_topic_partition_enable", parse_bool, True),
    "delete.topic.partition.interval.delay.ms":
        ("delete_topic_partition_interval_delay_ms", parse_int(0, MAX_MS), 300000),
    "log.segment.bytes": ("log_segment_bytes", parse_int(1024), 16777216),
    "log.retention.ms": ("log_retention_ms", parse_int(-1, 2**63 - 1), 604800000),
    "log.retention.check.interval.ms": ("log_retention_check_interval_ms", parse_int(1, MAX_MS), 300000),
    "log.cleanup.policy": ("log_cleanup_policy", parse_cleanup_policy, "delete"),
    "log.cleaner.backoff.ms": ("log_cleaner_backoff_ms", parse_int(1, MAX_MS), 15000),
    "log.cleaner.delete.retention.ms": ("log_cleaner_delete_retention_ms", parse_int(0, 2**63 - 1), 86400000),
    "log.cleaner.min.compaction.lag.ms": ("log_cleaner_min_compaction_lag_ms", parse_int(0, 2**63 - 1), 0),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", parse_int(0, MAX_MS), 0),
    "mutations": ("mutations", parse_names(mutation_names(BROKER), "mutation"), frozenset()),
    "request.log.path": ("request_log_path", parse_str, None),
}


@dataclass(frozen=True)
class BrokerConfig:
    broker_id: int
    listener: tuple[str, int]
    advertised: tuple[str, int]
    log_dir: str
    zookeeper_connect: str
    zookeeper_session_timeout_ms: int = 6000
    peer_addresses: dict[int, tuple[str, int]] = field(default_factory=dict)
    replica_lag_time_max_ms: int = 10000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = 1048576
    socket_request_max_bytes: int = 104857600
    min_insync_replicas: int = 1
    default_replication_factor: int = 1
    num_partitions: int = 1
    offsets_topic_num_partitions: int = 5
    offsets_topic_replication_factor: int | None = None  # None: min(3, live brokers)
    transaction_state_log_num_partitions: int = 50  # no transactions here: the count `__transaction_state` is created with
    share_coordinator_state_topic_num_partitions: int = 50  # likewise `__share_group_state`
    auto_create_topics_enable: bool = False
    unclean_leader_election_enable: bool = False
    leader_epoch_fencing_enable: bool = True
    ordered_delivery_enable: bool = True
    delete_topic_partition_enable: bool = True
    delete_topic_partition_interval_delay_ms: int = 300000  # KIP-694: 5 minutes
    log_segment_bytes: int = 16777216
    log_retention_ms: int = 604800000  # a topic's retention.ms overrides it; -1 keeps everything
    log_retention_check_interval_ms: int = 300000
    log_cleanup_policy: str = "delete"  # a topic's cleanup.policy overrides it
    log_cleaner_backoff_ms: int = 15000  # between compaction passes
    log_cleaner_delete_retention_ms: int = 86400000  # a topic's delete.retention.ms overrides it
    log_cleaner_min_compaction_lag_ms: int = 0  # a topic's min.compaction.lag.ms overrides it
    group_initial_rebalance_delay_ms: int = 0
    mutations: frozenset[str] = frozenset()  # elements turned off for `chaoskit mutate` (protocol/mutations.py)
    request_log_path: str | None = None  # one line per client request and its errors (broker/request_log.py)
    given: frozenset[str] = frozenset()  # the keys the config file set (DescribeConfigs: static, not default)

    @classmethod
    def from_dict(cls, raw: Any) -> "BrokerConfig":
        values = parse_spec(raw, SPEC)
        if values["advertised"] is None:
            values["advertised"] = values["listener"]
        if values["broker_id"] in values["peer_addresses"]:
            raise ConfigError(f"peer.addresses lists this broker's own id {values['broker_id']}; list only peers")
        return cls(**values, given=frozenset(k for k, v in raw.items() if v is not None))

    @classmethod
    def load(cls, path: str | Path) -> "BrokerConfig":
        return load_config_file(path, cls.from_dict)

    def peer_address(self, broker_id: int, registered: tuple[str, int] | None) -> tuple[str, int] | None:
        """How this broker reaches a peer: its peer.addresses entry, else the address the peer registered."""
        return self.peer_addresses.get(broker_id, registered)
