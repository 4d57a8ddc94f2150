"""A consumer group's committed offsets survive restarts, and no partition has two owners in the
group at once: Kafka's promises, for any Kafka-compatible broker.

A group of consumers reads keyed records, committing as it goes (every client here commits what it
delivered every half second or second, and when it closes). A watcher process asks the group's
coordinator, through the Admin API, for the group's committed offsets twice a second. Meanwhile
brokers are killed (kill -9) and restarted with their data, and the consumers twice close and start
again from what the group committed. Once the broker has answered a committed offset, a later
answer lower than it, or none at all, sends the group's consumers back over records they had
finished: `commit-regressed`. Every restart hands the partitions over to the members again; a
member that reads a partition again after another member did, with no assignment of its own in
between, held it at the same time as that member (`double-owner`; with several brokers, such as
tansu's, each naming itself the group's coordinator, that is where it would show). Where the broker
keeps its data in a storage service of its own (tansu over PostgreSQL), that service is killed and
restarted as well.
"""
from __future__ import annotations

import pytest

from chaoskit import mix
from chaoskit.cluster import capabilities as caps
from chaoskit.run.mixes import lagging_group_run

COMMITS, OWNERS = "commit-regressed", "double-owner"
# two kills of a broker (restarted with its data 1.5 s later): on a one-broker cluster the same
# broker, the group's coordinator each time. The first comes early and the second after the
# members' moves below, so neither move falls while the group's coordinator is down: a consumer
# that closes then cannot leave the group, the group waits out its session (10 s) before it can
# rebalance, and a partition may change hands only after the run
KILLS = [{"at": at, "fault": "kill", "target": "random-broker", "window_s": 1.5} for at in (0.1, 0.78)]
# the consumers closing and starting again from the group's commits (the storage case: after the
# storage's restart, and once more)
RESTARTS = [{"at": at, "fault": "clients", "target": "client", "window_s": 0.5, "params": {"action": "restart"}}
            for at in (0.4, 0.75)]
# between the kills the consumers restart (once a killed broker is back and a coordinator elected
# in its place: about 4 s), then one of them leaves the group for 4 s and comes back from the
# group's commits, so its partitions pass to the other member and back (a restart of all gives each
# member its partitions back: nothing changes hands; and on a broker slow to rebalance, a partition
# passed over is read by its new owner only seconds later)
BETWEEN_KILLS = [RESTARTS[0] | {"at": 0.4}, {"at": 0.58, "fault": "clients", "target": "client", "window_s": 4.0,
                                              "params": {"action": "leave", "which": "one"}}]
STORAGE_KILL = [{"at": 0.3, "fault": "kill", "target": "storage", "window_s": 1.5}]
# what each claim needs: committed offsets read again and again once something was committed, and
# partitions passed from member to member
READ = {COMMITS: {"commit_pairs": 20}, OWNERS: {"handovers": 1}}


@pytest.mark.chaos(workload="keyed-sequences", duration=24, profiles=("patched",), guarantee="kafka-consumer-groups",
                   epic="Kafka", feature="consumer groups")
def test_committed_offsets_survive_broker_kills(chaos):
    # the group keeps up (no poll_rate): a member given a partition reads it at once, not after a backlog
    result = lagging_group_run(chaos, [COMMITS, OWNERS], mix(KILLS + BETWEEN_KILLS, {}), watchers=1, poll_rate=None)
    chaos.expect(result, evidence=READ)


@pytest.mark.chaos_needs(caps.STORAGE)
@pytest.mark.chaos(workload="keyed-sequences", duration=20, profiles=("patched",), guarantee="kafka-consumer-groups",
                   epic="Kafka", feature="consumer groups")
def test_committed_offsets_survive_storage_kills(chaos):
    result = lagging_group_run(chaos, [COMMITS], mix(STORAGE_KILL + RESTARTS, {}), watchers=1)
    chaos.expect(result, evidence={COMMITS: READ[COMMITS]})
