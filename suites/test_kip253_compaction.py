"""KIP-253 §9: on a compacted topic that grows, a key that moves to a new partition leaves none of
its old values behind on the partition it left, once compaction has passed it: the producer sends
a tombstone for the key there with its writes on the new partition. After the run the topic is read
back from its start, as an application restoring a table would (run/restore.py), and
`moved-value-kept` judges what compaction left. The patched cluster with the ordered client leaves
nothing; stock Kafka (modulo partitioning, no tombstones) leaves the moved keys' last old values,
which a restore would bring back as current once the key is deleted.

The faults are the active controller's (killed as the topic grows, then killed, paused or cut off):
leaders stay put, so §9's tombstones, sent with acks=0 as the KIP has it, reach their partitions.
A leader isolation or kill drops the tombstones sent meanwhile, and a key whose writes all fell in
such a window keeps its old value: that is the KIP's choice of acks=0, not a client's bug, so these
runs keep the leaders reachable. Records stay uncompacted for 4 s (`min.compaction.lag.ms`), so
the group reads each before the cleaner can drop it.
"""
from __future__ import annotations

import pytest

from chaoskit.cluster import capabilities as caps
from chaoskit import Topic, admin_step, mix
from chaoskit.run.mixes import CONTROLLER_FAULTS, TOPIC, controller_failover

pytestmark = pytest.mark.chaos_needs(caps.KIP253)  # skipped, with the reason, on a broker without it

# small segments and a quick cleaner, so compaction passes every partition many times in a run;
# it trails the writes by about 6 s (the lag, a segment to fill, a pass), so the topic grows early
# (with the controller's kill it is done by about 25% of the run) and keys have moved for 10 s and
# more by the time the cleaner has passed
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.compaction.lag.ms": "4000",
             "delete.retention.ms": "1000"}
CLEANER = {"log.cleaner.backoff.ms": 500}
GROWTH = [admin_step(0.1, "expand", 8), controller_failover(0.1)]
# what the claim needs: keys that moved, judged on a partition compaction passed well after the move
MOVED = {"moved-value-kept": {"moved_keys": 5}}


def _run(chaos, keys: int):
    # unpatched, the drain waits in vain for values the cleaner removed before the group read them
    # (lost-write then fires beside moved-value-kept): do not wait long
    return chaos.run(topics=[Topic(TOPIC, 4, config=COMPACTED)], broker_config=CLEANER,
                     drain_timeout_s=chaos.pick(patched=60, unpatched=15),
                     workload_options={"producers": 3, "consumers": 2, "keys": keys, "rate": 40})


@pytest.mark.chaos(faults=mix(GROWTH, CONTROLLER_FAULTS), workload="keyed-sequences", duration=20,
                   epic="KIP-253", feature="compacted topic growing under controller faults", severity="normal",
                   guarantee="kip253-compaction")
def test_moved_keys_leave_no_value_behind(chaos):
    chaos.expect(_run(chaos, 60), unpatched={"moved-value-kept"}, evidence=MOVED)


@pytest.mark.nightly
@pytest.mark.chaos(faults=mix(GROWTH + [admin_step(0.6, "expand", 12)], CONTROLLER_FAULTS),
                   workload="keyed-sequences", duration=90, epic="KIP-253", guarantee="kip253-compaction",
                   feature="compacted topic growing twice under controller faults", severity="normal")
def test_moved_keys_leave_no_value_behind_long(chaos):
    chaos.expect(_run(chaos, 200), unpatched={"moved-value-kept"}, evidence=MOVED)
