"""Acknowledged writes are never lost: Kafka's own promise, for any Kafka-compatible broker.

Producers write keyed records with acks=all (every client here does) while a consumer group
reads a little slower than they write, so that at any moment some acknowledged records are not
yet read. Meanwhile brokers are killed (kill -9) and restarted with their data. Where the broker
keeps its data in a storage service of its own (tansu over PostgreSQL), that service is killed
and restarted too, and each broker's path to it is cut for a while. The checks are the ones loss
shows in: `lost-write` (an acknowledged write skipped while later ones were read), `unseen` (an
acknowledged write never read by the end) and `inconsistent-offsets` (an acknowledged offset that
came to hold another record).

On chaoskit's own broker the replicas keep what was acknowledged. On tansu over SQLite or
PostgreSQL a restarted broker reads its data back. tansu's memory engine keeps nothing across a
restart, by design: the killed broker comes back without the topic and the records the consumers
had not read yet, and the run reports them (`--chaos-broker tansu --chaos-broker-storage memory
-k durability` fails, with `unseen` or `lost-write` in its results.json: the checks see a foreign
broker lose data).
"""
from __future__ import annotations

import pytest

from chaoskit import mix
from chaoskit.cluster import capabilities as caps
from chaoskit.run.mixes import lagging_group_run

CHECKS = ["lost-write", "unseen", "inconsistent-offsets"]
# two kills (kill -9, restarted with its data 1.5 s later) of a broker, the second once the first one's
# broker is back: on a one-broker cluster (tansu over SQLite) the same broker twice. The first comes
# early enough that the consumers, reading slower than the producers write, have acknowledged
# records left to read (what a broker that forgets them loses)
KILLS = [{"at": at, "fault": "kill", "target": "random-broker", "window_s": 1.5} for at in (0.3, 0.6)]
# then the storage server killed and restarted, or cut off from every broker, or one broker cut off
# from it and from its clients
STORAGE_FAULTS = {"kill": {"weight": 1, "targets": ["storage"], "window_s": [1.0, 2.0]},
                  "partition": {"weight": 2, "targets": ["storage", "random-broker"], "window_s": [1.0, 3.0]}}
# a broker paused for 12 s (longer than the clients' 10 s request timeout: they ask the others), then resumed
PAUSE = [{"at": 0.2, "fault": "pause", "target": "random-broker", "window_s": 12.0}]
# what the claim needs: records acknowledged and read, and acknowledged once the faults had begun (a
# run whose producers all stopped at the first fault judged only what came before it)
READ = {"lost-write": {"acked_read": 50, "acked_after_fault": 50}}


@pytest.mark.chaos(workload="keyed-sequences", duration=20, profiles=("patched",), guarantee="kafka-durability",
                   epic="Kafka", feature="durability")
def test_acknowledged_writes_survive_broker_kills(chaos):
    chaos.expect(lagging_group_run(chaos, CHECKS, mix(KILLS, {})), evidence=READ)


@pytest.mark.chaos_needs(caps.STORAGE)
@pytest.mark.chaos(workload="keyed-sequences", duration=24, profiles=("patched",), guarantee="kafka-durability",
                   epic="Kafka", feature="durability")
def test_acknowledged_writes_survive_storage_faults(chaos):
    chaos.expect(lagging_group_run(chaos, CHECKS, mix(KILLS[:1], STORAGE_FAULTS, mean_interval_s=5.0)), evidence=READ)


@pytest.mark.nightly  # CI pauses brokers in other suites
@pytest.mark.chaos(workload="keyed-sequences", duration=24, profiles=("patched",), guarantee="kafka-durability",
                   epic="Kafka", feature="durability")
def test_acknowledged_writes_survive_a_paused_broker(chaos):
    chaos.expect(lagging_group_run(chaos, CHECKS, mix(PAUSE, {})), evidence=READ)
