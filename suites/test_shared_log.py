"""One partition is one log: however many brokers take writes for it, an offset holds one record
and a record sits at one offset. Kafka's promise, for any Kafka-compatible broker.

Three idempotent producers write keyed records to a topic of one partition, each starting from a
broker of its own (`spread`): on chaoskit's own broker they all reach the partition's leader; on
tansu over PostgreSQL, where every broker takes writes for every partition and names only itself,
three stateless brokers write the one log through one database. Meanwhile a broker is killed and
restarted (a producer's retries then meet what its first attempt may have written), and, where
the broker keeps its data in a storage service, that service is cut off from the brokers for a
while. A third story resets the clients' connections at random for a while (Toxiproxy's
`reset-peer`): answers to writes the broker took are lost, and the idempotent producers send them
again. The checks: `inconsistent-offsets` (two records at one offset), `duplicate` (one record at
two offsets: a retry written again despite idempotence), `lost-write` and `unseen`.
"""
from __future__ import annotations

import pytest

from chaoskit import Topic, mix
from chaoskit.cluster import capabilities as caps
from chaoskit.run.mixes import SMALL_POLLS, TOPIC

CHECKS = ["inconsistent-offsets", "duplicate", "lost-write", "unseen"]
WORKLOAD = {"producers": 3, "consumers": 2, "keys": 30, "rate": 40}
KILL = [{"at": 0.3, "fault": "kill", "target": "random-broker", "window_s": 1.5}]
STORAGE_CUT = [{"at": 0.6, "fault": "partition", "target": "storage", "window_s": 2.0}]
# half the clients' connections reset 0.2 s after they open, for 3 s; then a broker killed
RESETS = [{"at": 0.2, "fault": "reset-peer", "target": "client", "window_s": 3.0,
           "params": {"timeout": 200, "toxicity": 0.5}}, {**KILL[0], "at": 0.6}]
# what the claim needs: records acknowledged at offsets, and read back
WRITTEN = {"inconsistent-offsets": {"offsets": 100}, "lost-write": {"acked_read": 100}}


def _run(chaos, scripted):
    return chaos.run(topics=[Topic(TOPIC, 1)], checks=CHECKS, workload_options=dict(WORKLOAD),
                     client_options={**SMALL_POLLS, "spread": True}, faults=mix(scripted, {}), drain_timeout_s=20)


@pytest.mark.chaos(workload="keyed-sequences", duration=16, profiles=("patched",), guarantee="kafka-one-log",
                   epic="Kafka", feature="one log")
def test_one_offset_one_record_with_producers_on_every_broker(chaos):
    chaos.expect(_run(chaos, KILL), evidence=WRITTEN)


@pytest.mark.chaos_needs(caps.STORAGE)
@pytest.mark.chaos(workload="keyed-sequences", duration=16, profiles=("patched",), guarantee="kafka-one-log",
                   epic="Kafka", feature="one log")
def test_one_offset_one_record_while_the_storage_is_cut_off(chaos):
    chaos.expect(_run(chaos, KILL + STORAGE_CUT), evidence=WRITTEN)


@pytest.mark.nightly  # CI's kill case judges duplicates already
@pytest.mark.chaos(workload="keyed-sequences", duration=16, profiles=("patched",), guarantee="kafka-one-log",
                   epic="Kafka", feature="one log")
def test_retries_after_lost_answers_are_written_once(chaos):
    chaos.expect(_run(chaos, RESETS), evidence=WRITTEN)
