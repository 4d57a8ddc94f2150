"""KAFKA-20029: the guardrail on internal coordinator topics.

Growing `__consumer_offsets` moves groups to other partitions for brokers that read the new count,
while brokers that read it earlier keep the old placement: two coordinators serve one group. The
patched controller refuses the expansion (INVALID_REQUEST), so every broker keeps naming the same
coordinator. With the guardrail off the expansion goes through, two brokers restart (and read the
new count), and the coordinator-probe workload catches their answers disagreeing:
`coordinator-split`.
"""
from __future__ import annotations

import pytest

from chaoskit import admin_step, mix

OFFSETS = "__consumer_offsets"
GROW_OFFSETS = [admin_step(0.25, "expand", 10, topic=OFFSETS),
                {"at": 0.4, "fault": "kill", "target": "broker:1", "window_s": 1.0},
                {"at": 0.6, "fault": "kill", "target": "broker:2", "window_s": 1.0}]


@pytest.mark.chaos(faults=mix(GROW_OFFSETS, {}), workload="coordinator-probe", duration=16,
                   epic="KAFKA-20029", feature="__consumer_offsets expansion and broker restarts", severity="critical",
                   guarantee="kafka-20029-one-coordinator", clients=("probe",))
def test_one_coordinator_per_group(chaos):
    result = chaos.run(checks=["coordinator-split"], topics=[],
                       workload_options={"brokers": 3, "groups": 8, "rate": 10})
    # patched, the guardrail must refuse the expansion; unpatched, it must go through
    chaos.expect(result, unpatched={"coordinator-split"}, refused=chaos.pick(patched={"admin"}, unpatched=()),
                 evidence={"coordinator-split": {"answers": 100}})
