"""AdminClient: a wire-level admin client for the proposals' topic changes.

    with AdminClient("127.0.0.1:9092") as admin:
        admin.create_topic("orders", partitions=4, replication_factor=3)
        admin.expand("orders", 8)                      # CreatePartitions (KIP-253 expansion)
        admin.shrink("orders", 6)                      # DeletePartitions: removed once empty (KIP-253)
        admin.shrink("orders", 4, delay_ms=60_000)     # ... or after a delay, data or not (KIP-694)
        admin.delete_partitions({"orders": DeletePartitions(3, immediate_delete=True)})  # ... or at once
        admin.delete_partition_list({"orders": [2]})   # the partitions by index, as the RPC names them
        info = admin.topic("orders")                   # counts and modes from Metadata's tagged fields
        maps = admin.epoch_maps("orders")              # leaderEpochAfterCreation / BeforeDeletion

It speaks the Kafka protocol directly (chaoskit.protocol's WireClient and the KIP-extended
classes), so it sees what stock admin clients cannot: `initial_partition_count`,
`undeleted_partition_count`, partition `mode` and the epoch maps. Requests go to any bootstrap
broker that answers (the next one when a connection fails), or to a partition's leader where the
API needs it. A refusal raises AdminError with Kafka's code and the broker's message; batch calls
(create_partitions, delete_partitions) return per-topic results instead.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from kafka.protocol.admin import (CreatePartitionsRequest, CreateTopicsRequest, DeleteRecordsRequest,
                                  DeleteTopicsRequest, DescribeConfigsRequest)
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from chaoskit.protocol.errors import ErrorCode, error_name, retriable
from chaoskit.protocol.extensions import UNKNOWN_COUNT, PartitionMode
from chaoskit.protocol.internal import DeletePartitionsRequest, PartitionLeaderEpochsForPartitionsRequest
from chaoskit.protocol.wire_client import WireClient, WireError

METADATA_VERSION = 12  # flexible: carries the KIP tags
CREATE_TOPICS_VERSION = 5
CREATE_PARTITIONS_VERSION = 3
DELETE_TOPICS_VERSION = 3
DELETE_RECORDS_VERSION = 2
DESCRIBE_CONFIGS_VERSION = 1  # what Kafka 4 and our broker answer at the least; the fields we read are all in v1
TOPIC_RESOURCE = 2
DEFAULT_TIMEOUT_MS = 30_000


class AdminError(Exception):
    """A refused admin request: Kafka's error code (and whether retrying may help) and the broker's message."""

    def __init__(self, code: int, message: str | None, what: str) -> None:
        self.code, self.message, self.retriable = int(code), message or "", retriable(code)
        super().__init__(f"{what}: {error_name(code)} ({int(code)})" + (f": {message}" if message else ""))


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    mode: PartitionMode = PartitionMode.READ_WRITE
    error: int = ErrorCode.NONE


@dataclass(frozen=True)
class TopicInfo:
    """One topic as Metadata shows it; the counts are None when the broker sent none (unpatched)."""
    name: str
    error: int
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    initial_partition_count: int | None = None
    undeleted_partition_count: int | None = None
    is_internal: bool = False
    ordered_delivery: bool = True  # the topic config enable.ordered.delivery (DescribeConfigs; true when unread)
    compacted: bool = False  # its cleanup.policy has `compact` (DescribeConfigs; false until read)

    @property
    def marked_for_deletion(self) -> list[int]:
        return sorted(p for p, info in self.partitions.items() if info.mode != PartitionMode.READ_WRITE)


@dataclass(frozen=True)
class EpochMaps:
    """A partition's KIP-253 maps: other partitions' leader epochs before it was created / marked."""
    after_creation: dict[int, int]
    before_deletion: dict[int, int]


@dataclass(frozen=True)
class DeletePartitions:
    """KIP-694's AdminClient argument for one topic: keep `total_count` partitions (the rest, the
    highest, are deleted); `immediate_delete` removes them at once instead of after the delay."""
    total_count: int
    immediate_delete: bool = False


@dataclass(frozen=True)
class PartitionResult:
    """One partition of a DeletePartitions answer: its mode then (KIP-694's status code) and error."""
    status: PartitionMode
    code: int = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class Result:
    """One topic's outcome in a batch call."""
    code: int
    message: str | None = None
    partitions: dict[int, PartitionResult] = field(default_factory=dict)  # DeletePartitions: per partition

    @property
    def ok(self) -> bool:
        return self.code == ErrorCode.NONE

    @property
    def name(self) -> str:
        return error_name(self.code)

    @property
    def modes(self) -> dict[int, PartitionMode]:
        return {p: r.status for p, r in self.partitions.items()}

    @classmethod
    def of_partitions(cls, partitions: dict[int, PartitionResult]) -> Result:
        """The topic's code and message: its lowest refused partition's (NONE when none is)."""
        refused = [r for _p, r in sorted(partitions.items()) if r.code != ErrorCode.NONE]
        return cls(refused[0].code if refused else ErrorCode.NONE, refused[0].message if refused else None,
                   partitions)


@dataclass(frozen=True)
class TopicDescription:
    topic: TopicInfo
    epoch_maps: dict[int, EpochMaps]

    def to_json(self) -> dict[str, Any]:
        t = self.topic
        return {"topic": t.name, "initial_partition_count": t.initial_partition_count,
                "undeleted_partition_count": t.undeleted_partition_count, "partitions": [
                    {"partition": p, "leader": i.leader, "leader_epoch": i.leader_epoch, "replicas": list(i.replicas),
                     "isr": list(i.isr), "mode": i.mode.label,
                     "leaderEpochAfterCreation": _json_map(self.epoch_maps.get(p, EpochMaps({}, {})).after_creation),
                     "leaderEpochBeforeDeletion": _json_map(self.epoch_maps.get(p, EpochMaps({}, {})).before_deletion)}
                    for p, i in sorted(t.partitions.items())]}


def _json_map(epochs: dict[int, int]) -> dict[str, int]:
    return {str(p): e for p, e in sorted(epochs.items())}


def _count(value: int) -> int | None:
    return None if value == UNKNOWN_COUNT else value


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """["host:port", ...] (or one comma-separated string) as addresses; ValueError names a bad one."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in (i.strip() for i in items):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bootstrap server {item!r} is not host:port (e.g. 127.0.0.1:9092)")
        out.append((host, int(port)))
    if not out:
        raise ValueError("no bootstrap server given")
    return out


class AdminClient:
    def __init__(self, bootstrap_servers: str | Iterable[str], timeout_s: float = 30.0,
                 client_id: str = "chaoskit-admin") -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.timeout_s, self.client_id = timeout_s, client_id
        self._clients: dict[tuple[str, int], WireClient] = {}
        self._brokers: dict[int, tuple[str, int]] = {}

    # --- connections -----------------------------------------------------------------------
    def close(self) -> None:
        for c in self._clients.values():
            c.close()
        self._clients.clear()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _client(self, address: tuple[str, int]) -> WireClient:
        if address not in self._clients:
            self._clients[address] = WireClient(*address, timeout=self.timeout_s, client_id=self.client_id)
        return self._clients[address]

    def request(self, request: Any, version: int, broker: int | None = None) -> Any:
        """Send to `broker` (an id from Metadata) or to the first bootstrap broker that answers."""
        if broker is not None:
            if broker not in self._brokers:
                self.metadata([])
            address = self._brokers.get(broker)
            if address is None:
                raise AdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker} is not in the cluster's metadata",
                                 type(request).__name__)
            return self._client(address).request(request, version)
        failures = []
        for address in self.bootstrap:
            try:
                return self._client(address).request(request, version)
            except WireError as e:
                failures.append(str(e))
        raise WireError(f"no bootstrap broker answered {type(request).__name__}: " + "; ".join(failures))

    def start_from_next_broker(self) -> None:
        """Bootstrap requests go first to the next broker in the list from now on (round robin)."""
        self.bootstrap.append(self.bootstrap.pop(0))

    # --- metadata --------------------------------------------------------------------------
    def metadata(self, topics: list[str] | None = None) -> dict[str, TopicInfo]:
        """Topics (all when None) as Metadata v12 shows them, with the KIP fields."""
        wanted = None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t, topic_id=None) for t in topics]
        response = self.request(MetadataRequest(topics=wanted, allow_auto_topic_creation=False), METADATA_VERSION)
        self._brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        out = {}
        for t in response.topics:
            parts = {p.partition_index: PartitionInfo(p.partition_index, p.leader_id, p.leader_epoch,
                                                      tuple(p.replica_nodes), tuple(p.isr_nodes),
                                                      PartitionMode.of(p.mode), p.error_code)
                     for p in t.partitions}
            out[t.name] = TopicInfo(t.name, t.error_code, parts, _count(t.initial_partition_count),
                                    _count(t.undeleted_partition_count), bool(t.is_internal))
        return out

    def topic(self, name: str) -> TopicInfo:
        info = self.metadata([name]).get(name)
        if info is None or info.error != ErrorCode.NONE:
            raise AdminError(info.error if info else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, f"topic {name!r}")
        return info

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """ApiVersions (v0) of the first bootstrap broker that answers: {api key: (min, max)}."""
        response = self.request(ApiVersionsRequest(), 0)
        _raise(response.error_code, None, "ApiVersions")
        return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def brokers(self) -> dict[int, tuple[str, int]]:
        self.metadata([])
        return dict(self._brokers)

    # --- creating and expanding ------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     config: Mapping[str, str] | None = None, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        T = CreateTopicsRequest.CreatableTopic
        request = CreateTopicsRequest(timeout_ms=timeout_ms, validate_only=False, topics=[T(
            name=name, num_partitions=partitions, replication_factor=replication_factor, assignments=[],
            configs=[T.CreatableTopicConfig(name=k, value=v) for k, v in (config or {}).items()])])
        r = self.request(request, CREATE_TOPICS_VERSION).topics[0]
        _raise(r.error_code, r.error_message, f"creating topic {name!r}")

    def delete_topics(self, names: Iterable[str], timeout_ms: int = DEFAULT_TIMEOUT_MS) -> dict[str, Result]:
        """DeleteTopics: {topic: Result}, each gone from the answering broker's metadata when it is ok."""
        response = self.request(DeleteTopicsRequest(topic_names=list(names), timeout_ms=timeout_ms),
                                DELETE_TOPICS_VERSION)
        return {r.name: Result(r.error_code, getattr(r, "error_message", None)) for r in response.responses}

    def create_partitions(self, counts: Mapping[str, int], timeout_ms: int = DEFAULT_TIMEOUT_MS,
                          validate_only: bool = False) -> dict[str, Result]:
        """CreatePartitions for several topics at once: {topic: Result} (the guardrail refuses per topic)."""
        T = CreatePartitionsRequest.CreatePartitionsTopic
        request = CreatePartitionsRequest(timeout_ms=timeout_ms, validate_only=validate_only,
                                          topics=[T(name=t, count=n, assignments=None) for t, n in counts.items()])
        response = self.request(request, CREATE_PARTITIONS_VERSION)
        return {r.name: Result(r.error_code, r.error_message) for r in response.results}

    def expand(self, topic: str, count: int, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> TopicInfo:
        """Grow `topic` to `count` partitions; the topic as Metadata then shows it."""
        r = self.create_partitions({topic: count}, timeout_ms)[topic]
        _raise(r.code, r.message, f"expanding {topic!r} to {count} partitions")
        return self.topic(topic)

    # --- shrinking -------------------------------------------------------------------------
    def delete_partition_list(self, partitions: Mapping[str, Iterable[int]], delay_ms: int | None = None,
                              immediate: bool = False, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> dict[str, Result]:
        """DeletePartitions by partition index: {topic: Result with each partition's status and error}.

        The partitions must be the topic's highest undeleted ones. delay_ms None: each is removed
        once empty (KIP-253); a number: that long after it became ReadOnly, data or not (KIP-694);
        immediate: right away."""
        T = DeletePartitionsRequest.DeletePartitionsTopic
        request = DeletePartitionsRequest(timeout_ms=timeout_ms, immediate_delete=immediate,
                                          delete_partitions_delay=-1 if delay_ms is None else delay_ms,
                                          topics=[T(name=t, partitions=sorted(ps)) for t, ps in partitions.items()])
        response = self.request(request, 0)
        _raise(response.error_code, response.error_message, "deleting partitions")
        return {r.name: Result.of_partitions({p.partition_index: PartitionResult(
                    PartitionMode.of(p.status_code), p.error_code, p.error_message) for p in r.partitions})
                for r in response.responses}

    def delete_partitions(self, partitions: Mapping[str, DeletePartitions | int], delay_ms: int | None = None,
                          timeout_ms: int = DEFAULT_TIMEOUT_MS) -> dict[str, Result]:
        """KIP-694's deletePartitions: each topic down to its total count (a number stands for
        DeletePartitions(number)); the partitions above it, from Metadata, go in the request."""
        asks = {t: d if isinstance(d, DeletePartitions) else DeletePartitions(d) for t, d in partitions.items()}
        out: dict[str, Result] = {}
        lists: dict[bool, dict[str, list[int]]] = {False: {}, True: {}}
        known = self.metadata(list(asks))
        for name, ask in asks.items():
            info = known.get(name)
            if info is None or info.error != ErrorCode.NONE:
                out[name] = Result(info.error if info else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   f"topic {name!r} is not in the cluster's metadata")
                continue
            undeleted = info.undeleted_partition_count
            undeleted = len(info.partitions) if undeleted is None else undeleted
            if (refusal := _shrink_refusal(name, ask.total_count, undeleted)) is not None:
                out[name] = refusal
                continue
            lists[ask.immediate_delete][name] = list(range(ask.total_count, undeleted))
        for immediate, named in lists.items():
            if named:
                out.update(self.delete_partition_list(named, delay_ms, immediate, timeout_ms))
        return out

    def shrink(self, topic: str, count: int, delay_ms: int | None = None, immediate: bool = False,
               timeout_ms: int = DEFAULT_TIMEOUT_MS, undeleted: int | None = None) -> dict[int, PartitionMode]:
        """Shrink `topic` to `count` undeleted partitions; the marked partitions and their modes.
        `undeleted`: the count the caller already knows the topic has (from ZooKeeper, say), so the
        partitions asked for do not rest on Metadata from a broker that may not have heard the last
        change; the controller still checks them."""
        if delay_ms is not None and delay_ms < 0:
            raise ValueError(f"delay_ms must be >= 0 (or None: once empty), got {delay_ms}")
        if undeleted is None:
            r = self.delete_partitions({topic: DeletePartitions(count, immediate)}, delay_ms, timeout_ms)[topic]
        else:
            r = _shrink_refusal(topic, count, undeleted) or \
                self.delete_partition_list({topic: range(count, undeleted)}, delay_ms, immediate, timeout_ms)[topic]
        _raise(r.code, r.message, f"shrinking {topic!r} to {count} partitions")
        return r.modes

    def delete_records(self, topic: str, offsets: Mapping[int, int],
                       timeout_ms: int = DEFAULT_TIMEOUT_MS) -> dict[int, int]:
        """DeleteRecords before each offset (-1: the high watermark), at each partition's leader;
        {partition: new log start}."""
        info = self.topic(topic)
        by_leader: dict[int, list[int]] = {}
        for p in offsets:
            if p not in info.partitions:
                raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, f"{topic}-{p}")
            by_leader.setdefault(info.partitions[p].leader, []).append(p)
        T = DeleteRecordsRequest.DeleteRecordsTopic
        out: dict[int, int] = {}
        for leader, parts in sorted(by_leader.items()):
            request = DeleteRecordsRequest(timeout_ms=timeout_ms, topics=[T(name=topic, partitions=[
                T.DeleteRecordsPartition(partition_index=p, offset=offsets[p]) for p in parts])])
            for r in self.request(request, DELETE_RECORDS_VERSION, broker=leader).topics[0].partitions:
                _raise(r.error_code, None, f"deleting records of {topic}-{r.partition_index}")
                out[r.partition_index] = r.low_watermark
        return out

    # --- describing ------------------------------------------------------------------------
    def epoch_maps(self, topic: str, partitions: Iterable[int] | None = None,
                   missing_ok: bool = False) -> dict[int, EpochMaps]:
        """PartitionLeaderEpochsForPartitions: each partition's maps (all partitions when None);
        with missing_ok a partition removed meanwhile is left out instead of raising."""
        wanted = sorted(self.topic(topic).partitions if partitions is None else partitions)
        T = PartitionLeaderEpochsForPartitionsRequest.PartitionLeaderEpochsForPartitionsRequestTopic
        response = self.request(PartitionLeaderEpochsForPartitionsRequest(topics=[T(name=topic, partitions=wanted)]), 0)
        out = {}
        for p in response.topics[0].partitions:
            if missing_ok and p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                continue
            _raise(p.error_code, None, f"epoch maps of {topic}-{p.partition_index}")
            out[p.partition_index] = EpochMaps({e.partition: e.leader_epoch for e in p.leader_epoch_after_creation},
                                               {e.partition: e.leader_epoch for e in p.leader_epoch_before_deletion})
        return out

    def topic_configs(self, topics: Iterable[str], keys: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
        """DescribeConfigs for topics: {topic: {name: value}} (`keys` only, all when None); a topic the
        broker refused (e.g. UNKNOWN_TOPIC_OR_PARTITION) is left out."""
        R = DescribeConfigsRequest.DescribeConfigsResource
        wanted = None if keys is None else list(keys)
        request = DescribeConfigsRequest(include_synonyms=False, resources=[
            R(resource_type=TOPIC_RESOURCE, resource_name=t, configuration_keys=wanted) for t in topics])
        response = self.request(request, DESCRIBE_CONFIGS_VERSION)
        return {r.resource_name: {c.name: c.value for c in r.configs}
                for r in response.results if r.error_code == ErrorCode.NONE}

    def describe(self, topic: str) -> TopicDescription:
        info = self.topic(topic)
        return TopicDescription(info, self.epoch_maps(topic, info.partitions, missing_ok=True))


def _shrink_refusal(topic: str, count: int, undeleted: int) -> Result | None:
    """INVALID_PARTITIONS when `count` is not a shrink of a topic with `undeleted` partitions."""
    if 1 <= count < undeleted:
        return None
    return Result(ErrorCode.INVALID_PARTITIONS, f"topic {topic!r} has {undeleted} undeleted partitions; "
                  f"the new count {count} must be smaller and at least 1")


def _raise(code: int, message: str | None, what: str) -> None:
    if code != ErrorCode.NONE:
        raise AdminError(code, message, what)
