"""The ZooKeeper layout (docs/internals.md §2): every path and the JSON codec of every znode.

Shared by the controller and the brokers, so both read and write the same shapes. Decoding a
znode that does not have the expected shape raises `ZkDataError` naming the path and what is
wrong; fields this code does not know are kept in `extra` and written back unchanged, so an older
writer never drops a newer field. The proposals' fields (KIP-253's counts and epoch maps, KIP-694's
`mode`) are written only when set, so a topic the proposals never touched keeps its old shape.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

from chaoskit.protocol.extensions import PartitionMode

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
DELETE_TOPICS = "/admin/delete_topics"
ISR_CHANGE = "/isr_change_notification"
ISR_CHANGE_PREFIX = f"{ISR_CHANGE}/isr_change_"

NO_LEADER = -1


class ZkDataError(ValueError):
    """A znode's content is not what the layout says; the message names the path."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


def loads(path: str, data: bytes | None) -> Any:
    try:
        return json.loads(data) if data else None
    except (ValueError, UnicodeDecodeError) as e:
        raise ZkDataError(f"{path}: not JSON ({e}); rewrite or delete the znode") from e


def _obj(path: str, data: bytes | None, required: tuple[str, ...]) -> dict[str, Any]:
    obj = loads(path, data)
    if not isinstance(obj, dict):
        raise ZkDataError(f"{path}: expected a JSON object, got {obj!r}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise ZkDataError(f"{path}: missing field(s) {', '.join(missing)} in {obj!r}")
    return obj


def now_ms() -> str:
    return str(int(time.time() * 1000))


def _host_port(path: str, text: str) -> tuple[str, int]:
    host, _, port = str(text).rpartition(":")
    if not host or not port.isdigit():
        raise ZkDataError(f"{path}: {text!r} is not host:port")
    return host, int(port)


@dataclass(frozen=True)
class BrokerRegistration:
    """`/brokers/ids/<id>`: the advertised (client) address and the bound (internal) listener."""

    broker_id: int
    host: str
    port: int
    internal: tuple[str, int]
    rack: str | None = None

    def encode(self) -> bytes:
        return dumps({"version": 5, "host": self.host, "port": self.port,
                      "endpoints": [f"PLAINTEXT://{self.host}:{self.port}"],
                      "internal": "%s:%d" % self.internal, "rack": self.rack, "timestamp": now_ms()})

    @classmethod
    def decode(cls, broker_id: int, data: bytes | None) -> BrokerRegistration:
        path = broker_path(broker_id)
        obj = _obj(path, data, ("host", "port"))
        internal = _host_port(path, obj["internal"]) if obj.get("internal") else (obj["host"], int(obj["port"]))
        return cls(broker_id, str(obj["host"]), int(obj["port"]), internal, obj.get("rack"))


def _optional_int(path: str, obj: dict[str, Any], key: str) -> int | None:
    value = obj.pop(key, None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZkDataError(f"{path}: {key} must be an integer, got {value!r}")
    return value


def _epoch_map(path: str, obj: dict[str, Any], key: str) -> dict[int, int]:
    raw = obj.pop(key, None) or {}
    try:
        return {int(p): int(e) for p, e in raw.items()}
    except (AttributeError, TypeError, ValueError) as e:
        raise ZkDataError(f"{path}: {key} must map \"<partition>\" to a leader epoch, got {raw!r}") from e


def _encode_map(epochs: dict[int, int]) -> dict[str, int]:
    return {str(p): e for p, e in sorted(epochs.items())}


@dataclass(frozen=True)
class TopicAssignment:
    """`/brokers/topics/<t>`: partition -> replicas, in preference order, and KIP-253's counts.

    `undeleted_partition_count` is the count producers use; partitions at or above it are marked
    for deletion (or about to be). `delete_partitions_delay_ms` is the last DeletePartitions'
    delay (-1: remove each once empty, KIP-253; >= 0: that long after it became ReadOnly, KIP-694).
    """

    partitions: dict[int, list[int]]
    extra: dict[str, Any] = field(default_factory=dict)
    initial_partition_count: int | None = None
    undeleted_partition_count: int | None = None
    delete_partitions_delay_ms: int | None = None

    def encode(self) -> bytes:
        body = {**self.extra, "version": 2,
                "partitions": {str(p): list(r) for p, r in sorted(self.partitions.items())}}
        for key in ("initial_partition_count", "undeleted_partition_count", "delete_partitions_delay_ms"):
            if getattr(self, key) is not None:
                body[key] = getattr(self, key)
        return dumps(body)

    @classmethod
    def decode(cls, topic: str, data: bytes | None) -> TopicAssignment:
        path = topic_path(topic)
        obj = _obj(path, data, ("partitions",))
        raw = obj.pop("partitions")
        obj.pop("version", None)
        try:
            parts = {int(p): [int(b) for b in r] for p, r in raw.items()}
        except (AttributeError, TypeError, ValueError) as e:
            raise ZkDataError(f"{path}: partitions must map \"<partition>\" to [broker ids], got {raw!r}") from e
        counts = {k: _optional_int(path, obj, k)
                  for k in ("initial_partition_count", "undeleted_partition_count", "delete_partitions_delay_ms")}
        return cls(parts, obj, **counts)

    def evolve(self, **changes: Any) -> TopicAssignment:
        return replace(self, **changes)

    @property
    def undeleted(self) -> int:
        """The producers' partition count: the field, else every partition in the assignment."""
        return len(self.partitions) if self.undeleted_partition_count is None else self.undeleted_partition_count


@dataclass(frozen=True)
class PartitionState:
    """`/brokers/topics/<t>/partitions/<p>/state`: who leads at which epoch, and the ISR."""

    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    partition_epoch: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # KIP-253: other partitions' leader epochs before this one was created / marked for deletion
    after_creation: dict[int, int] = field(default_factory=dict)
    before_deletion: dict[int, int] = field(default_factory=dict)
    mode: PartitionMode = PartitionMode.READ_WRITE  # KIP-694
    delete_at_ms: int | None = None  # KIP-694 delayed deletion: ReadOnly -> None at this wall-clock time

    @property
    def online(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def marked_for_deletion(self) -> bool:
        return self.mode != PartitionMode.READ_WRITE

    def encode(self) -> bytes:
        body = {**self.extra, "version": 1, "controller_epoch": self.controller_epoch,
                "leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "partition_epoch": self.partition_epoch}
        if self.after_creation:
            body["leaderEpochAfterCreation"] = _encode_map(self.after_creation)
        if self.before_deletion:
            body["leaderEpochBeforeDeletion"] = _encode_map(self.before_deletion)
        if self.mode != PartitionMode.READ_WRITE:
            body["mode"] = int(self.mode)
        if self.delete_at_ms is not None:
            body["delete_at_ms"] = self.delete_at_ms
        return dumps(body)

    @classmethod
    def decode(cls, topic: str, partition: int, data: bytes | None) -> PartitionState:
        path = state_path(topic, partition)
        obj = _obj(path, data, ("leader", "leader_epoch", "isr", "controller_epoch"))
        known = ("version", "leader", "leader_epoch", "isr", "controller_epoch", "partition_epoch")
        after, before = _epoch_map(path, obj, "leaderEpochAfterCreation"), _epoch_map(path, obj, "leaderEpochBeforeDeletion")
        delete_at = _optional_int(path, obj, "delete_at_ms")
        try:
            mode = PartitionMode.of(int(obj.pop("mode", 0)))
            return cls(int(obj["leader"]), int(obj["leader_epoch"]), [int(b) for b in obj["isr"]],
                       int(obj["controller_epoch"]), int(obj.get("partition_epoch", 0)),
                       {k: v for k, v in obj.items() if k not in known}, after, before, mode, delete_at)
        except (TypeError, ValueError) as e:
            raise ZkDataError(f"{path}: bad field in {obj!r}: {e}") from e

    def evolve(self, **changes: Any) -> PartitionState:
        return replace(self, **changes)


def decode_topic_config(topic: str, data: bytes | None) -> dict[str, str]:
    """`/config/topics/<t>`'s overrides (string values, as Kafka writes them)."""
    if not data:
        return {}
    obj = _obj(topic_config_path(topic), data, ())
    config = obj.get("config", {})
    if not isinstance(config, dict):
        raise ZkDataError(f"{topic_config_path(topic)}: config must be an object, got {config!r}")
    return {str(k): str(v) for k, v in config.items()}


def encode_topic_config(config: dict[str, str]) -> bytes:
    return dumps({"version": 1, "config": {k: str(v) for k, v in config.items()}})


def encode_controller(controller_id: int) -> bytes:
    return dumps({"version": 1, "controller_id": controller_id, "timestamp": now_ms()})


def decode_controller(data: bytes | None) -> int:
    return int(_obj(CONTROLLER, data, ("controller_id",))["controller_id"])


def decode_epoch(data: bytes | None) -> int:
    try:
        return int((data or b"0").decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise ZkDataError(f"{CONTROLLER_EPOCH}: expected a decimal number, got {data!r}") from e


def encode_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def encode_isr_change(partitions: list[tuple[str, int]]) -> bytes:
    return dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_isr_change(path: str, data: bytes | None) -> list[tuple[str, int]]:
    obj = _obj(path, data, ("partitions",))
    try:
        return [(str(e["topic"]), int(e["partition"])) for e in obj["partitions"]]
    except (KeyError, TypeError, ValueError) as e:
        raise ZkDataError(f"{path}: partitions must be [{{topic, partition}}], got {obj['partitions']!r}") from e
