"""The proposals' partition APIs: DeletePartitions (KIP-694, also KIP-253's deletion) and
PartitionLeaderEpochsForPartitions (KIP-253), on private keys (docs/protocol.md).

DeletePartitions takes each topic's partitions by list. KIP-253's linear hashing can only lose a
topic's highest partitions, so the list must be a tail of the undeleted ones (already marked ones
may be named again); a topic whose list breaks a rule is left alone and every partition it names
says why. The broker lowers `undeleted_partition_count` in the topic's ZooKeeper znode with the
removal delay (0 for `immediate_delete`) and answers once its metadata shows the partitions
ReadOnly (or gone); the controller does the rest (docs/internals.md §5).
PartitionLeaderEpochsForPartitions reads the epoch maps from the partition state znodes, the
source KIP-253 names.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from chaoskit.broker.handlers.registry import handles
from chaoskit.broker.topic_admin import wait_for_metadata, zk_call
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.internal import (DELETE_PARTITIONS, PARTITION_LEADER_EPOCHS, DeletePartitionsResponse,
                                        PartitionLeaderEpochsForPartitionsResponse)
from chaoskit.protocol.topics import COORDINATOR_TOPICS
from chaoskit.protocol.zk_layout import TopicAssignment

_Result = DeletePartitionsResponse.DeletePartitionsTopicResult
_Part = _Result.DeletePartitionsPartitionResult
_Epochs = PartitionLeaderEpochsForPartitionsResponse
_ETopic = _Epochs.PartitionLeaderEpochsForPartitionsResponseTopic
_EPart = _ETopic.PartitionLeaderEpochsForPartitionsResponsePartition
_Entry = _EPart.PartitionLeaderEpoch

Refusals = dict[int, tuple[int, str]]  # partition -> (error code, message)


def refusals(topic: str, placed: TopicAssignment, wanted: set[int]) -> Refusals:
    """Why each partition of `wanted` may not be deleted (empty: all may). Pure: the rules alone."""
    undeleted, floor = placed.undeleted, placed.initial_partition_count or 1
    out: Refusals = {}
    for p in sorted(wanted):
        kept_above = [q for q in range(p + 1, undeleted) if q not in wanted]
        if p not in placed.partitions:
            out[p] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic} has no partition {p}")
        elif p >= undeleted:
            continue  # marked already: naming it again is a retry
        elif p < floor:
            out[p] = (ErrorCode.INVALID_PARTITIONS, f"partition {p} is below {topic}'s initial partition count "
                      f"{floor}: those partitions are never deleted (KIP-253)")
        elif kept_above:
            out[p] = (ErrorCode.INVALID_PARTITIONS, f"partition {p} is not at the tail of {topic}: partitions "
                      f"{kept_above} above it are kept, and linear hashing can only lose the highest partitions")
    if out:
        why = "; ".join(f"{p}: {m}" for p, (_c, m) in sorted(out.items()))
        for p in wanted - set(out):
            out[p] = (ErrorCode.INVALID_PARTITIONS, f"{topic} left unchanged: the request names partitions that "
                      f"cannot be deleted ({why})")
    return out


async def _lower_count(broker: Any, name: str, wanted: set[int], delay: int) -> Refusals:
    """Lower the topic's undeleted count to the smallest partition of `wanted`, or say why not."""
    def everyone(code: int, message: str) -> Refusals:
        return {p: (code, message) for p in wanted}
    if name in COORDINATOR_TOPICS:
        return everyone(ErrorCode.INVALID_REQUEST, f"{name} is an internal coordinator topic: its partition "
                        "count is part of how groups are found and cannot be reduced")
    for _attempt in range(3):  # a concurrent rewrite of the topic znode: re-read and retry
        current = await zk_call(broker.zk.assignment, name)
        if current is None:
            return everyone(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        placed, version = current
        unfinished = sorted(set(placed.partitions) - set(broker.cache.topics.get(name, {})))
        if unfinished:
            return everyone(ErrorCode.INVALID_PARTITIONS, f"topic {name!r} is still being expanded (partitions "
                            f"{unfinished} are not in the metadata yet); retry once they are")
        refused = refusals(name, placed, wanted)
        new = min(wanted, default=placed.undeleted)
        if refused or new >= placed.undeleted:  # refused, or every partition named is marked already
            return refused
        # KIP-253's floor, where the controller has not set it yet; without KIP-253 (KIP-694 alone)
        # there is none, and a topic may be shrunk again below what it had at its first shrink
        floor = placed.initial_partition_count or (len(placed.partitions) if broker.config.ordered_delivery_enable
                                                   else None)
        shrunk = placed.evolve(undeleted_partition_count=new, delete_partitions_delay_ms=delay,
                               initial_partition_count=floor)
        if await zk_call(broker.zk.set_assignment, name, shrunk, version):
            return {}
    return everyone(ErrorCode.REQUEST_TIMED_OUT, f"the topic znode of {name!r} kept changing; retry")


def _request_error(request: Any) -> str | None:
    delay = request.delete_partitions_delay
    if delay < -1:
        return f"delete_partitions_delay {delay}: use a delay >= 0 ms, or -1 (once each partition is empty)"
    if request.immediate_delete and delay > 0:
        return f"immediate_delete with delete_partitions_delay {delay}: ask for one or the other"
    names = Counter(t.name for t in request.topics)
    twice = sorted(n for n, c in names.items() if c > 1)
    return f"topics named more than once: {twice}" if twice else None


@handles(DELETE_PARTITIONS)
async def delete_partitions(broker: Any, header: Any, request: Any) -> Any:
    def refuse(code: int, message: str) -> Any:
        return DeletePartitionsResponse(throttle_time_ms=0, error_code=code, error_message=message, responses=[])
    if not broker.config.delete_topic_partition_enable:
        return refuse(ErrorCode.TOPIC_DELETION_DISABLED,
                      "partition deletion is disabled on this broker (delete.topic.partition.enable=false)")
    problem = _request_error(request)
    if problem:
        return refuse(ErrorCode.INVALID_REQUEST, problem)
    delay = 0 if request.immediate_delete else request.delete_partitions_delay
    outcome: dict[str, Refusals] = {}
    for t in request.topics:
        wanted = set(t.partitions)
        try:
            outcome[t.name] = await _lower_count(broker, t.name, wanted, delay) if wanted else {}
        except KafkaError as e:  # ZooKeeper did not answer
            outcome[t.name] = {p: (e.code, e.message) for p in wanted}
    cache = broker.cache
    accepted = {t.name: set(t.partitions) - set(outcome[t.name]) for t in request.topics}

    def marked() -> bool:
        return all(_mode(cache, name, p) != PartitionMode.READ_WRITE for name, ps in accepted.items() for p in ps)

    await wait_for_metadata(broker, marked, request.timeout_ms)
    responses = []
    for t in request.topics:
        parts = []
        for p in sorted(set(t.partitions)):
            mode = _mode(cache, t.name, p)
            code, message = outcome[t.name].get(p, (ErrorCode.NONE, None))
            if code == ErrorCode.NONE and mode == PartitionMode.READ_WRITE:
                code, message = ErrorCode.REQUEST_TIMED_OUT, (f"not yet ReadOnly after {request.timeout_ms} ms; "
                                                               "it completes in the background")
            parts.append(_Part(partition_index=p, status_code=int(mode), error_code=code, error_message=message))
        responses.append(_Result(name=t.name, partitions=parts))
    return DeletePartitionsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, responses=responses)


def _mode(cache: Any, topic: str, partition: int) -> PartitionMode:
    info = cache.partition(topic, partition)
    return PartitionMode.NONE if info is None else info.mode  # not (or no longer) there counts as None


def _entries(epochs: dict[int, int]) -> list[Any]:
    return [_Entry(partition=p, leader_epoch=e) for p, e in sorted(epochs.items())]


async def _epochs_of(broker: Any, topic: str, partition: int) -> Any:
    try:
        state = await zk_call(broker.zk.partition_state, topic, partition)
    except KafkaError as e:
        return _EPart(partition_index=partition, error_code=e.code, leader_epoch_after_creation=[],
                      leader_epoch_before_deletion=[])
    if state is None:
        return _EPart(partition_index=partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      leader_epoch_after_creation=[], leader_epoch_before_deletion=[])
    return _EPart(partition_index=partition, error_code=ErrorCode.NONE,
                  leader_epoch_after_creation=_entries(state.after_creation),
                  leader_epoch_before_deletion=_entries(state.before_deletion))


@handles(PARTITION_LEADER_EPOCHS)
async def partition_leader_epochs(broker: Any, header: Any, request: Any) -> Any:
    topics = []
    for t in request.topics:
        parts = await asyncio.gather(*(_epochs_of(broker, t.name, p) for p in t.partitions))
        topics.append(_ETopic(name=t.name, partitions=list(parts)))
    return _Epochs(throttle_time_ms=0, topics=topics)
