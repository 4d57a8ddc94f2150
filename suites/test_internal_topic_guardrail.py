"""KAFKA-20029: the guardrail on internal coordinator topics.

Growing `__consumer_offsets` moves groups to other partitions for brokers that read the new count,
while brokers that read it earlier keep the old placement: two coordinators serve one group. The
patched controller refuses the expansion (INVALID_REQUEST), so every broker keeps naming the same
coordinator. With the guardrail off the expansion goes through, two brokers restart (and read the
new count), and the coordinator-probe workload catches their answers disagreeing:
`coordinator-split`.

The same run also sends, from a stock AdminClient (kafka-python's), one CreatePartitions for a
mixed batch: the three internal topics and an ordinary one. Patched, each internal topic is refused
with INVALID_REQUEST while the ordinary topic grows (the batch goes on without them); unpatched,
all four grow. The active controller is killed as the first admin step starts (the brokers keep
the flag the last controller sent them; the next one sends its own), and the brokers are killed and
restarted after both admin steps, under the probe's load.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.cluster import capabilities as caps
from chaoskit import Topic, admin_step, mix
from chaoskit.run.mixes import controller_failover
from chaoskit.history.reader import History
from chaoskit.protocol.topics import COORDINATOR_TOPICS

pytestmark = pytest.mark.chaos_needs(caps.GUARDRAIL)  # skipped, with the reason, on a broker without it

OFFSETS = "__consumer_offsets"
# the internal topics that exist only to be named (no transactions or share groups here) and an ordinary one
OTHER_INTERNAL = sorted(COORDINATOR_TOPICS - {OFFSETS})
BATCH_TOPICS = [Topic(name, 2) for name in (*OTHER_INTERNAL, "plain")]
# an internal topic is created only with its configured count: two, not the default fifty
INTERNAL_COUNTS = {"transaction.state.log.num.partitions": 2, "share.coordinator.state.topic.num.partitions": 2}
BATCH = {OFFSETS: 12, **{t.name: 4 for t in BATCH_TOPICS}}
GROW_OFFSETS = [admin_step(0.2, "expand", 10, topic=OFFSETS), controller_failover(0.2),
                {"at": 0.3, "fault": "expand-batch", "target": "client", "window_s": 0.5, "params": {"topics": BATCH}},
                {"at": 0.4, "fault": "kill", "target": "broker:1", "window_s": 1.0},
                {"at": 0.6, "fault": "kill", "target": "broker:2", "window_s": 1.0}]
# the back door round the guardrail: a stock AdminClient deletes an internal topic and asks for it again;
# it is made only with its configured count (every profile: the rule is chaoskit's, beside the proposal)
RECREATE = [{"at": 0.8, "fault": "recreate-topics", "target": "client", "window_s": 0.5,  # after the batch's retries
             "params": {"topics": {"__share_group_state": 3,  # not its configured 2: refused
                                   "__transaction_state": 2}}}]  # its configured count: made again


@pytest.mark.chaos(faults=mix(GROW_OFFSETS + RECREATE, {}), workload="coordinator-probe", duration=16,
                   epic="KAFKA-20029", feature="__consumer_offsets expansion and broker restarts", severity="critical",
                   guarantee="kafka-20029-one-coordinator", clients=("probe",))
def test_one_coordinator_per_group(chaos):
    result = chaos.run(checks=["coordinator-split"], topics=BATCH_TOPICS, broker_config=INTERNAL_COUNTS,
                       workload_options={"brokers": 3, "groups": 8, "rate": 10})
    # patched, the guardrail must refuse the expansions; unpatched, they must go through
    chaos.expect(result, unpatched={"coordinator-split"},
                 refused=chaos.pick(patched={"admin", "expand-batch", "recreate-topics"}, unpatched={"recreate-topics"}),
                 evidence={"coordinator-split": {"answers": 100}})
    grown = {t for t, outcome in batch_outcomes(result.history).items() if outcome == "ok"}
    assert grown == chaos.pick(patched={"plain"}, unpatched=set(BATCH)), batch_outcomes(result.history)
    remade = [o for o in History.from_path(result.history).ops if o.get("f") == "recreate" and o["type"] != "invoke"]
    assert {o["topic"]: o["type"] for o in remade} == {"__share_group_state": "fail", "__transaction_state": "ok"}, \
        {o["topic"]: o.get("error", o["type"]) for o in remade}  # the refusals' reasons, when one is unexpected


def batch_outcomes(history: Path) -> dict[str, str]:
    """Each topic of the stock AdminClient's batch: "ok", or its refusal as recorded."""
    ops = History.from_path(history).ops
    return {o["topic"]: "ok" if o["type"] == "ok" else o.get("error", o["type"])
            for o in ops if o.get("process") == "admin" and o["f"] == "expand" and o["type"] != "invoke"
            and o.get("value", {}).get("count") == BATCH.get(o.get("topic"))}
