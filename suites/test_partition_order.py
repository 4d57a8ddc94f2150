"""Each partition is read in the order it was written: Kafka's per-partition order, for any
Kafka-compatible broker.

Idempotent producers, each starting from a broker of its own (`spread`), write keyed records to
a topic of two partitions while a consumer group reads; a broker is killed and restarted in the
middle. A producer's sends to one partition must get increasing offsets (`nonmonotonic-send`),
and a consumer's records of one partition must come in offset order (`nonmonotonic-poll`) without
jumping over records that exist (`poll-skip`), unless a rebalance gave it the partition anew.
"""
from __future__ import annotations

import pytest

from chaoskit import Topic, mix
from chaoskit.run.mixes import SMALL_POLLS, TOPIC

CHECKS = ["nonmonotonic-send", "nonmonotonic-poll", "poll-skip"]
WORKLOAD = {"producers": 3, "consumers": 2, "keys": 30, "rate": 40}
KILL = [{"at": 0.4, "fault": "kill", "target": "random-broker", "window_s": 1.5}]
# what the claim needs: several sends per producer and partition, records read two in a row
ORDERED = {"nonmonotonic-send": {"send_pairs": 100}, "nonmonotonic-poll": {"steps": 100}}


@pytest.mark.chaos(workload="keyed-sequences", duration=16, profiles=("patched",), guarantee="kafka-partition-order",
                   epic="Kafka", feature="partition order")
def test_each_partition_is_written_and_read_in_order_across_a_broker_kill(chaos):
    result = chaos.run(topics=[Topic(TOPIC, 2)], checks=CHECKS, workload_options=dict(WORKLOAD),
                       client_options={**SMALL_POLLS, "spread": True}, faults=mix(KILL, {}), drain_timeout_s=20)
    chaos.expect(result, evidence=ORDERED)
