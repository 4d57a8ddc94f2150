"""CreateTopics, DeleteTopics and CreatePartitions: validate, write the change into ZooKeeper, and
answer once the metadata cache shows it (or REQUEST_TIMED_OUT when the request's timeout passes
first; the change still completes later).

CreatePartitions also applies the proposals: KAFKA-20029's guardrail answers INVALID_REQUEST for an
internal coordinator topic (unless the controller allows it) while the request's other topics go on;
KIP-253 refuses an expansion while partitions are marked for deletion and writes the new
`undeleted_partition_count` with the new assignment (the deletion side is partitions.py).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from kafka.protocol.admin import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse

from chaoskit.broker.assignment import PlacementError, leader_start, place_replicas
from chaoskit.broker.handlers.registry import handles
from chaoskit.broker.topic_admin import check_assignment, create_topic, wait_for_metadata, zk_call
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.topics import COORDINATOR_TOPICS


async def _settle(broker: Any, results: dict[str, Any], done: Any, timeout_ms: int) -> None:
    """Wait for every successful entry of results to satisfy done(name); mark the rest timed out."""
    pending = [name for name, r in results.items() if r.error_code == ErrorCode.NONE]
    if not pending:
        return
    await wait_for_metadata(broker, lambda: all(done(n) for n in pending), timeout_ms)
    for name in pending:
        if not done(name):
            results[name].error_code = ErrorCode.REQUEST_TIMED_OUT
            results[name].error_message = f"not yet visible after {timeout_ms} ms; it completes in the background"


def _visible(cache: Any, topic: str, partitions: int) -> bool:
    """The metadata cache shows the topic with all its partitions, each with a live leader."""
    return cache.partition_count(topic) == partitions and cache.has_leaders(topic)


def _duplicates(names: list[str]) -> set[str]:
    return {n for n, c in Counter(names).items() if c > 1}


async def _each_topic(topics: list[Any], result: Any, act: Any) -> dict[str, Any]:
    """{topic: result} after act(topic request) for each topic named once; a topic named twice is
    INVALID_REQUEST, and a KafkaError from act becomes that topic's error."""
    results: dict[str, Any] = {}
    dupes = _duplicates([t.name for t in topics])
    for t in topics:
        if t.name in dupes:
            results[t.name] = result(name=t.name, error_code=ErrorCode.INVALID_REQUEST,
                                     error_message="topic named more than once in the request")
            continue
        try:
            results[t.name] = await act(t)
        except KafkaError as e:
            results[t.name] = result(name=t.name, error_code=e.code, error_message=e.message)
    return results


@handles(19)
async def create_topics(broker: Any, header: Any, request: Any) -> Any:
    Result = CreateTopicsResponse.CreatableTopicResult

    async def create(t: Any) -> Any:
        assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        n, rf = await create_topic(broker, t.name, t.num_partitions, t.replication_factor, assignment,
                                   {c.name: c.value for c in t.configs}, request.validate_only)
        return Result(name=t.name, error_code=ErrorCode.NONE, num_partitions=n, replication_factor=rf, configs=None)

    results = await _each_topic(request.topics, lambda **kw: Result(configs=None, **kw), create)
    if not request.validate_only:
        await _settle(broker, results, lambda n: _visible(broker.cache, n, results[n].num_partitions),
                      request.timeout_ms)
    return CreateTopicsResponse(throttle_time_ms=0, topics=list(results.values()))


@handles(20)
async def delete_topics(broker: Any, header: Any, request: Any) -> Any:
    Result = DeleteTopicsResponse.DeletableTopicResult
    results: dict[str, Any] = {}
    existing = None
    for name in request.topic_names:
        try:
            existing = existing if existing is not None else set(await zk_call(broker.zk.topics))
            if name not in existing:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            await zk_call(broker.zk.mark_for_deletion, name)
            results[name] = Result(name=name, error_code=ErrorCode.NONE)
        except KafkaError as e:
            results[name] = Result(name=name, error_code=e.code, error_message=e.message)
    await _settle(broker, results, lambda n: n not in broker.cache.topics, request.timeout_ms)
    return DeleteTopicsResponse(throttle_time_ms=0, responses=list(results.values()))


def _check_guardrail(broker: Any, topic: str) -> None:
    if topic in COORDINATOR_TOPICS and not broker.cache.heard_from_controller:
        # just (re)started: the controller's setting has not reached us; a retriable answer, so the
        # client asks again (or another broker) rather than take our default for the controller's
        raise KafkaError(ErrorCode.NOT_CONTROLLER, f"{topic}: this broker has no metadata from the controller yet")
    if topic in COORDINATOR_TOPICS and not broker.cache.allow_internal_partition_increase:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"{topic} is an internal coordinator topic: more partitions would route its keys to "
                         "other partitions on brokers with older metadata (split brain); set "
                         "controller.unstable.allow.internal.coordinator.partition.increase=true to allow it")


async def _grow(broker: Any, t: Any, validate_only: bool) -> None:
    _check_guardrail(broker, t.name)
    for _attempt in range(3):  # a concurrent rewrite of the assignment: re-read and retry
        current = await zk_call(broker.zk.assignment, t.name)
        if current is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {t.name!r} does not exist")
        placed, version = current
        assignment = placed.partitions
        have = len(assignment)
        marked = sorted(set(range(placed.undeleted, max(assignment) + 1)) & set(assignment)) or \
            broker.cache.marked_for_deletion(t.name)
        if marked:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {t.name!r} has partitions {marked} marked for deletion; it can grow again once "
                             "they are removed (when empty: consume them, or DeleteRecords) (KIP-253)")
        if t.count <= have:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {t.name!r} has {have} partitions; the new count {t.count} must be larger")
        live = sorted(await zk_call(broker.zk.live_brokers))
        rf = len(assignment[0]) if 0 in assignment else len(next(iter(assignment.values())))
        if t.assignments:
            extra = {have + i: list(a.broker_ids) for i, a in enumerate(t.assignments)}
            if len(extra) != t.count - have:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"{len(extra)} assignments given for {t.count - have} new partitions")
            check_assignment(extra, live, first_partition=have)
        else:
            try:
                extra = place_replicas(t.name, live, t.count - have, rf, first_partition=have,
                                       start=leader_start(live, assignment.get(0, [])))
            except PlacementError as e:
                raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, str(e)) from e
        grown = replace(placed, partitions={**assignment, **extra})  # other fields kept
        if broker.config.ordered_delivery_enable:  # KIP-253: producers' count moves with the assignment
            grown = grown.evolve(undeleted_partition_count=t.count,
                                 initial_partition_count=placed.initial_partition_count or have)
        if validate_only or await zk_call(broker.zk.set_assignment, t.name, grown, version):
            return
    raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"the assignment of {t.name!r} kept changing; retry")


@handles(37)
async def create_partitions(broker: Any, header: Any, request: Any) -> Any:
    Result = CreatePartitionsResponse.CreatePartitionsTopicResult

    async def grow(t: Any) -> Any:
        await _grow(broker, t, request.validate_only)
        return Result(name=t.name, error_code=ErrorCode.NONE)

    results = await _each_topic(request.topics, Result, grow)
    counts = {t.name: t.count for t in request.topics}
    if not request.validate_only:
        await _settle(broker, results, lambda n: _visible(broker.cache, n, counts[n]), request.timeout_ms)
    return CreatePartitionsResponse(throttle_time_ms=0, results=list(results.values()))
