"""BrokerConfig: the broker's JSON config file (docs/internals.md §1), validated key by key.

An unknown key or a bad value raises ConfigError naming the key, what was given and what is
allowed; `python -m chaoskit.broker` prints it and exits with code 2.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


class ConfigError(ValueError):
    """A config file the broker cannot run with; the message says what to change."""


def parse_address(key: str, value: Any, *, allow_port_zero: bool = False) -> tuple[str, int]:
    """("host", port) from "host:port" (a "PLAINTEXT://" prefix is accepted, as Kafka writes it)."""
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a \"host:port\" string, got {value!r}")
    text = value.split("://", 1)[1] if "://" in value else value
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ConfigError(f"{key}: {value!r} is not \"host:port\" (e.g. \"127.0.0.1:9092\")")
    port = int(port_text)
    if not (0 if allow_port_zero else 1) <= port <= 65535:
        what = "0-65535" if allow_port_zero else "1-65535 (port 0 is refused: the backend chooses ports)"
        raise ConfigError(f"{key}: port {port} is out of range; use {what}")
    return host, port


def _int(lo: int, hi: int = 2**31 - 1) -> Callable[[str, Any], int]:
    def check(key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            else:
                raise ConfigError(f"{key}: expected an integer, got {value!r}")
        if not lo <= value <= hi:
            raise ConfigError(f"{key}: {value} is out of range; allowed {lo}..{hi}")
        return value
    return check


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def _str(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key}: expected a non-empty string, got {value!r}")
    return value


def _zk_connect(key: str, value: Any) -> str:
    for part in _str(key, value).split(","):
        parse_address(key, part.split("/", 1)[0])
    return value


def _peers(key: str, value: Any) -> dict[int, tuple[str, int]]:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected an object {{\"<broker id>\": \"host:port\"}}, got {value!r}")
    peers = {}
    for bid, addr in value.items():
        if not str(bid).isdigit():
            raise ConfigError(f"{key}: {bid!r} is not a broker id (a non-negative integer)")
        peers[int(bid)] = parse_address(f"{key}[{bid}]", addr)
    return peers


_MAX_MS = 2**31 - 1
# key -> (attribute, parser, default); a default of REQUIRED must be given.
REQUIRED = object()
SPEC: dict[str, tuple[str, Callable[[str, Any], Any], Any]] = {
    "broker.id": ("broker_id", _int(0), REQUIRED),
    "listeners": ("listener", parse_address, REQUIRED),
    "advertised.listeners": ("advertised", parse_address, None),
    "log.dirs": ("log_dir", _str, REQUIRED),
    "zookeeper.connect": ("zookeeper_connect", _zk_connect, REQUIRED),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", _int(1000, _MAX_MS), 6000),
    "peer.addresses": ("peer_addresses", _peers, {}),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", _int(1, _MAX_MS), 10000),
    "replica.fetch.wait.max.ms": ("replica_fetch_wait_max_ms", _int(0, _MAX_MS), 500),
    "replica.fetch.max.bytes": ("replica_fetch_max_bytes", _int(1024), 1048576),
    "socket.request.max.bytes": ("socket_request_max_bytes", _int(1024), 104857600),
    "min.insync.replicas": ("min_insync_replicas", _int(1), 1),
    "default.replication.factor": ("default_replication_factor", _int(1, 32767), 1),
    "num.partitions": ("num_partitions", _int(1), 1),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", _int(1), 5),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", _int(1, 32767), None),
    "auto.create.topics.enable": ("auto_create_topics_enable", _bool, False),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", _bool, False),
    "leader.epoch.fencing.enable": ("leader_epoch_fencing_enable", _bool, True),
    "ordered.delivery.enable": ("ordered_delivery_enable", _bool, True),
    "delete.topic.partition.enable": ("delete_topic_partition_enable", _bool, True),
    "delete.topic.partition.interval.delay.ms": ("delete_topic_partition_interval_delay_ms", _int(0, _MAX_MS), 60000),
    "log.segment.bytes": ("log_segment_bytes", _int(1024), 16777216),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", _int(0, _MAX_MS), 0),
}


def parse_spec(raw: Any, spec: dict[str, tuple[str, Callable[[str, Any], Any], Any]]) -> dict[str, Any]:
    """{attribute: value} for a JSON object of Kafka-style keys checked against spec; ConfigError
    names an unknown key, a missing required one, or a bad value."""
    if not isinstance(raw, dict):
        raise ConfigError(f"the config must be a JSON object of Kafka-style keys, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(spec))
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: {', '.join(sorted(spec))}")
    values: dict[str, Any] = {}
    for key, (attr, parse, default) in spec.items():
        if raw.get(key) is not None:
            values[attr] = parse(key, raw[key])
        elif default is REQUIRED:
            raise ConfigError(f"{key} is required (see docs/internals.md §1)")
        else:
            values[attr] = default
    return values


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
    auto_create_topics_enable: bool = False
    unclean_leader_election_enable: bool = False
    leader_epoch_fencing_enable: bool = True
    ordered_delivery_enable: bool = True
    delete_topic_partition_enable: bool = True
    delete_topic_partition_interval_delay_ms: int = 60000
    log_segment_bytes: int = 16777216
    group_initial_rebalance_delay_ms: int = 0

    @classmethod
    def from_dict(cls, raw: Any) -> "BrokerConfig":
        values = parse_spec(raw, SPEC)
        if values["advertised"] is None:
            values["advertised"] = values["listener"]
        if values["broker_id"] in values["peer_addresses"]:
            raise ConfigError(f"peer.addresses lists this broker's own id {values['broker_id']}; list only peers")
        return cls(**values)

    @classmethod
    def load(cls, path: str | Path) -> "BrokerConfig":
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise ConfigError(f"cannot read config file {path}: {e.strerror}") from e
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
        try:
            return cls.from_dict(raw)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from e

    def peer_address(self, broker_id: int, registered: tuple[str, int] | None) -> tuple[str, int] | None:
        """How this broker reaches a peer: its peer.addresses entry, else the address the peer registered."""
        return self.peer_addresses.get(broker_id, registered)
