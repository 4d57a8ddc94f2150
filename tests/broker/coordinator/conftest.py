"""A harness for the group coordinator's unit tests (reached through the `run` fixture, since
test modules cannot import a conftest under --import-mode=importlib): requests go through the real wire path
(kafka-python encodes them, chaoskit.protocol.registry decodes them, the coordinator answers,
encode_response frames the answer, kafka-python decodes it), over an in-memory `__consumer_offsets`
store and a ManualClock. Nothing sleeps: tests move the clock and let the event loop run.
"""
from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kafka.protocol.consumer import (JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest, OffsetFetchRequest,
                                     SyncGroupRequest)

from chaoskit.broker.coordinator import GroupCoordinator, ManualClock
from chaoskit.protocol.errors import KafkaError
from chaoskit.protocol.registry import REQUESTS, decode_request, encode_response, response_class

METHODS = {8: "offset_commit", 9: "offset_fetch", 10: "find_coordinator", 11: "join_group", 12: "heartbeat",
           13: "leave_group", 14: "sync_group", 15: "describe_groups", 16: "list_groups",
           32003: "consumer_group_position"}
SESSION_MS = 10_000
REBALANCE_MS = 30_000
_CTopic = OffsetCommitRequest.OffsetCommitRequestTopic
_CPart = _CTopic.OffsetCommitRequestPartition
_FTopic = OffsetFetchRequest.OffsetFetchRequestTopic


class MemoryStore:
    """`__consumer_offsets` as lists of (key, value); can fail or hold appends and loads."""

    def __init__(self) -> None:
        self.logs: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        self.fail_with: int | None = None
        self.hold_appends: asyncio.Event | None = None
        self.hold_reads: asyncio.Event | None = None

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> int:
        if self.hold_appends is not None:
            await self.hold_appends.wait()
        if self.fail_with is not None:
            raise KafkaError(self.fail_with, "injected by the test")
        offset = len(self.logs[partition])
        self.logs[partition].extend(records)
        return offset

    def read_all(self, partition: int) -> Any:
        records = list(self.logs[partition])
        if self.hold_reads is None:
            return records
        gate = self.hold_reads

        async def later() -> list[tuple[bytes, bytes | None]]:
            await gate.wait()
            return records
        return later()


class Harness:
    SESSION_MS = SESSION_MS
    REBALANCE_MS = REBALANCE_MS

    def __init__(self, store: MemoryStore | None = None, partitions: int = 1, initial_delay_ms: int = 3000,
                 broker_id: int = 1, seed: int = 7, clock: ManualClock | None = None) -> None:
        self.initial_delay_ms = initial_delay_ms
        self.clock = clock or ManualClock()
        self.store = store or MemoryStore()
        self.coordinator = GroupCoordinator(broker_id, self.store, partition_count=partitions, clock=self.clock,
                                            initial_rebalance_delay_ms=initial_delay_ms, rng=random.Random(seed))
        self._correlation = 0

    async def lead_all(self) -> None:
        for p in range(self.coordinator.partition_count):
            await self.coordinator.on_become_leader(p)

    async def call(self, api_key: int, version: int, client_id: str = "tester", **fields: Any) -> Any:
        """One request through encode -> decode_request -> handler -> encode_response -> decode."""
        self._correlation += 1
        correlation = self._correlation
        extra = {"locate": fields.pop("_locate")} if "_locate" in fields else {}
        request = REQUESTS[api_key](version=version, **fields)
        request.with_header(correlation_id=correlation, client_id=client_id)
        header, decoded = decode_request(bytes(request.encode(header=True)))
        response = await getattr(self.coordinator, METHODS[api_key])(decoded, version, **extra)
        framed = encode_response(header, response)
        out = response_class(api_key, version).decode(framed[4:], version=version, header=True)
        assert out.header.correlation_id == correlation
        return out

    @staticmethod
    async def settle(rounds: int = 50) -> None:
        """Let every runnable task run until it blocks (no time passes)."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    async def until_done(self, tasks: list[asyncio.Task[Any]], step_ms: float, max_steps: int = 20) -> int:
        """Advance the clock step by step until every task is done; the time that took (ms)."""
        for step in range(max_steps):
            await self.settle()
            if all(t.done() for t in tasks):
                return int(step * step_ms)
            self.clock.advance(step_ms)
        raise AssertionError(f"not done after {max_steps} steps of {step_ms} ms: {tasks}")

    def start(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        return asyncio.ensure_future(coro)

    # -- group API shorthands -----------------------------------------------------------------
    def join(self, group: str, member_id: str = "", version: int = 5, protocols: list[tuple[str, bytes]] | None = None,
             client_id: str = "consumer", session_ms: int = SESSION_MS, rebalance_ms: int = REBALANCE_MS,
             instance_id: str | None = None, protocol_type: str = "consumer") -> asyncio.Task[Any]:
        protos = [JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m)
                  for n, m in (protocols or [("range", b"sub-" + client_id.encode())])]
        fields: dict[str, Any] = dict(group_id=group, session_timeout_ms=session_ms, member_id=member_id,
                                      protocol_type=protocol_type, protocols=protos)
        if version >= 1:
            fields["rebalance_timeout_ms"] = rebalance_ms
        if version >= 5:
            fields["group_instance_id"] = instance_id
        return self.start(self.call(11, version, client_id=client_id, **fields))

    def sync(self, group: str, generation: int, member_id: str, assignments: dict[str, bytes] | None = None,
             version: int = 3) -> asyncio.Task[Any]:
        items = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                 for m, a in (assignments or {}).items()]
        return self.start(self.call(14, version, group_id=group, generation_id=generation, member_id=member_id,
                                    assignments=items))

    async def heartbeat(self, group: str, generation: int, member_id: str, version: int = 3) -> int:
        return (await self.call(12, version, group_id=group, generation_id=generation, member_id=member_id)).error_code

    async def leave(self, group: str, *member_ids: str, version: int = 3) -> Any:
        if version < 3:
            return await self.call(13, version, group_id=group, member_id=member_ids[0])
        members = [LeaveGroupRequest.MemberIdentity(member_id=m) for m in member_ids]
        return await self.call(13, version, group_id=group, members=members)

    async def describe(self, group: str, version: int = 4) -> Any:
        return (await self.call(15, version, groups=[group])).groups[0]

    async def commit(self, group: str, version: int, offsets: dict[tuple[str, int], tuple[int, int, str | None]],
                     generation: int = -1, member_id: str = "") -> dict[tuple[str, int], int]:
        """OffsetCommit of {(topic, partition): (offset, leader epoch, metadata)}; the error of each."""
        by_topic: dict[str, list[Any]] = {}
        for (topic, p), (offset, epoch, meta) in offsets.items():
            part = dict(partition_index=p, committed_offset=offset, committed_metadata=meta)
            if version >= 6:
                part["committed_leader_epoch"] = epoch
            by_topic.setdefault(topic, []).append(_CPart(**part))
        fields = dict(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
                      topics=[_CTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
        if version >= 7:
            fields["group_instance_id"] = None
        out = await self.call(8, version, **fields)
        return {(t.name, p.partition_index): p.error_code for t in out.topics for p in t.partitions}

    async def fetch(self, group: str, version: int, partitions: list[tuple[str, int]] | None) -> tuple[int, dict]:
        """OffsetFetch: (top-level error, {(topic, partition): (offset, leader epoch or None below v5,
        metadata, error)})."""
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for t, p in partitions:
                by_topic.setdefault(t, []).append(p)
            topics = [_FTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()]
        out = await self.call(9, version, group_id=group, topics=topics)
        rows = {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch if version >= 5 else None,
                                              p.metadata, p.error_code) for t in out.topics for p in t.partitions}
        return (out.error_code if version >= 2 else 0), rows

    async def joined(self, group: str, n: int) -> list[Any]:
        """n members through their first JoinGroup (initial delay waited out), not yet synced."""
        assert self.initial_delay_ms > 0, "needs an initial rebalance delay to land n members in one generation"
        tasks = [await self.full_join(group, f"c{i}") for i in range(n)]
        await self.until_done(tasks, step_ms=self.initial_delay_ms)
        return [t.result() for t in tasks]

    async def full_join(self, group: str, client_id: str, **kw: Any) -> asyncio.Task[Any]:
        """JoinGroup v4+: get a member id (MEMBER_ID_REQUIRED), then join with it (task)."""
        first = await self.join(group, client_id=client_id, **kw)
        assert first.error_code == 79, first  # MEMBER_ID_REQUIRED
        return self.join(group, member_id=first.member_id, client_id=client_id, **kw)

    async def form_group(self, group: str, n: int) -> tuple[int, list[str]]:
        """n members joined and synced (each assigned b'assign-<i>'); (generation, member ids, leader first)."""
        joined = await self.joined(group, n)
        assert {j.error_code for j in joined} == {0}, joined
        leader = joined[0].leader
        generation = joined[0].generation_id
        ids = [leader] + [j.member_id for j in joined if j.member_id != leader]
        plan = {m: f"assign-{i}".encode() for i, m in enumerate(ids)}
        syncs = [self.sync(group, generation, m) for m in ids[1:]]
        await self.settle()
        syncs.insert(0, self.sync(group, generation, leader, plan))
        results = [await s for s in syncs]
        assert [r.assignment for r in results] == [plan[m] for m in ids], results
        return generation, ids


@pytest.fixture
def run() -> Callable[[Callable[..., Awaitable[Any]]], Any]:
    """run(scenario, **harness_kwargs): scenario(harness) on a fresh event loop, bounded in time."""
    def runner(scenario: Callable[..., Awaitable[Any]], **kw: Any) -> Any:
        async def main() -> Any:
            h = Harness(**kw)
            await h.lead_all()
            try:
                return await asyncio.wait_for(scenario(h), timeout=10)
            finally:
                await h.coordinator.close()
        return asyncio.run(main())
    return runner
