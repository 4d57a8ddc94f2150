"""The group coordinator: Kafka's classic consumer group protocol, with offsets and group metadata
kept in `__consumer_offsets` (docs/internals.md §4).

What the broker calls (all on its asyncio loop; every handler answers errors in its response):

    coordinator = GroupCoordinator(broker_id, store, partition_count=<offsets.topic.num.partitions>,
                                   initial_rebalance_delay_ms=<group.initial.rebalance.delay.ms>,
                                   partition_exists=<optional (topic, partition) -> bool>)
    await coordinator.find_coordinator(request, version, locate)  # locate(partition) -> (id, host, port) | None
    await coordinator.join_group(request, version, client_host="")  # waits for the rebalance
    await coordinator.sync_group(request, version)                  # followers wait for the leader
    await coordinator.heartbeat(request, version)
    await coordinator.leave_group(request, version)
    await coordinator.describe_groups(request, version)
    await coordinator.list_groups(request, version)
    await coordinator.offset_commit(request, version)
    await coordinator.offset_fetch(request, version)
    await coordinator.on_become_leader(partition)  # this broker leads __consumer_offsets-<partition>
    await coordinator.on_resign(partition)         # it no longer does
    coordinator.on_partitions_deleted({(topic, partition), ...})  # gone: their offsets go too
    coordinator.partition_for(group_id)            # == partition_for(group_id, partition_count)
    coordinator.partition_count = n                # settable: must match what FindCoordinator uses
    await coordinator.close()                      # at shutdown

Requests are kafka-python 3.0 objects as `chaoskit.protocol.registry.decode_request` returns them
(the client id for DescribeGroups comes from `request.header`); each response comes back at the
request's version for `encode_response`. `store` is the broker's: `append(partition, [(key, value),
...]) -> awaitable first offset` (one batch, acks=all; raises `chaoskit.protocol.errors.KafkaError`
on failure) and `read_all(partition)` (records in log order as (key, value) pairs or objects with
`.key`/`.value`; may return an awaitable). Groups of a partition answer COORDINATOR_LOAD_IN_PROGRESS
while it loads and NOT_COORDINATOR once resigned. Timers use `clock` (`LoopClock` by default;
tests pass `ManualClock` and drive it). Member ids are `<client id>-<uuid>` from `rng` (pass a
seeded `random.Random` for reproducible ids).

Not done: offset retention/expiry, transactional offset commits, KIP-848 (OffsetCommit v9+, member
epochs), DeleteGroups/OffsetDelete; a static member that rejoins under a new member id is renamed
and triggers a rebalance (Kafka skips the rebalance when its protocols did not change).

Modules: clock (timers), codec (record encoding), group (state), ownership
(partitions, loading, writes), membership (join/sync/heartbeat/leave), offsets (commit/fetch),
coordinator (the handlers above). Group -> partition (`partition_for`) is chaoskit.protocol.topics.
"""
from chaoskit.broker.coordinator.clock import Clock, LoopClock, ManualClock
from chaoskit.broker.coordinator.coordinator import GroupCoordinator
from chaoskit.broker.coordinator.group import GroupState
from chaoskit.broker.coordinator.ownership import OffsetsStore
from chaoskit.protocol.topics import java_string_hashcode, partition_for

__all__ = ["Clock", "GroupCoordinator", "GroupState", "LoopClock", "ManualClock", "OffsetsStore",
           "java_string_hashcode", "partition_for"]
