"""KIP-320: a zombie broker (its ZooKeeper session gone, still fetching) is fenced, and with clean
elections no acknowledged write is lost.

The `zombie-rejoin` fault stages KAFKA-6880 on orders/0 with clean elections only: a follower
loses ZooKeeper and keeps fetching at its old leader epoch; the leader dies with records the
other follower lacks, that follower leads and acknowledges writes at those offsets, leadership
returns, and the zombie, which never truncated, is let back into the ISR and finally elected
(docs/faults.md has the steps). Patched leaders fence its fetches (FENCED_LEADER_EPOCH) and keep
an offline replica out of the ISR, so nothing is lost. Without KIP-320 the zombie's log keeps the
old unacknowledged records where acknowledged ones were: `inconsistent-offsets` (an acknowledged
offset read back holding another record): Z keeps the story's own acks=1 records at offsets where
the new leader acknowledged others. Most runs also show `lost-write`; an overwritten record the
stock producer re-sent is still read elsewhere (a `duplicate`), so the changed offsets are what
every unpatched run shows.

The group reads only after the story (it joins at the end of the run), from whichever replica
then leads, as a consumer started after an outage would.

`test_an_offline_replica_never_counts_towards_min_insync` stages KIP-320's other half with the
`zombie-isr` fault: a follower the controller marks offline must not join the ISR, for "the zombie
contributes to the min.isr requirement, but is not eligible to become leader". On a topic with
min.insync.replicas=2 that allows unclean elections, the zombie catches up while offline, the
other follower leaves the ISR and the leader dies: patched, the leader alone refused every write
since, so the follower elected uncleanly has all that was acknowledged; a zombie let into the ISR
(unpatched, or with the offline-replica-isr mutation) acknowledged writes with the leader that the
elected follower never had, and takes new ones at their offsets: `inconsistent-offsets`. The
producers pause while the follower leaves the ISR, so every record the story puts there was
acknowledged. `chaoskit explore` found this story (docs/verdicts.md).
"""
from __future__ import annotations

import pytest

from chaoskit.cluster import capabilities as caps
from chaoskit import Topic, mix
from chaoskit.run.mixes import TOPIC, controller_failover

pytestmark = pytest.mark.chaos_needs(caps.KIP320)  # skipped, with the reason, on a broker without it


def _story(partition: int, at_s: float) -> dict:
    # three acks=1 records the lagging follower lacks: the zombie keeps them where acknowledged
    # records land on the new leader
    return {"at_s": at_s, "fault": "zombie-rejoin", "target": f"leader-of:{TOPIC}/{partition}", "window_s": 1.0,
            "params": {"in_flight": 3}}


DURABLE = {"min.insync.replicas": "2"}
# what the claim needs: every step of the story (9; unpatched, the zombie's two rejoins make 11)
STORY = {"zombie-rejoin": {"steps": 9}}
# the story cuts a follower's fetches for a moment and needs it still in the ISR when the leader dies
PATIENT_LEADERS = {"replica.lag.time.max.ms": 30000}


def _run(chaos, rate: float):
    # unpatched, the drain waits in vain for the lost writes: do not wait long
    return chaos.run(topics=[Topic(TOPIC, 2, config=DURABLE)], broker_config=PATIENT_LEADERS,
                     drain_timeout_s=chaos.pick(patched=30, unpatched=10),
                    
                     workload_options={"producers": 4, "consumers": 2, "keys": 20, "rate": rate,
                                       "consumer_start_s": chaos.test().duration_s})


@pytest.mark.chaos(faults=mix([_story(0, 3.0)], {}), workload="keyed-sequences", duration=34,
                   epic="KIP-320", feature="zombie brokers", severity="critical", guarantee="kip320-zombie-fencing")
def test_zombies_are_fenced(chaos):
    chaos.expect(_run(chaos, 30), unpatched={"inconsistent-offsets"}, evidence=STORY)


@pytest.mark.nightly  # the active controller killed between the stories and cut off past its session after the second
@pytest.mark.chaos(faults=mix([_story(0, 3.0), _story(1, 60.0), controller_failover(0.45),
                               controller_failover(0.9, "partition")], {}), workload="keyed-sequences", duration=110,
                   epic="KIP-320", feature="zombie brokers on every partition", severity="critical",
                   guarantee="kip320-zombie-fencing")
def test_zombies_are_fenced_long(chaos):
    chaos.expect(_run(chaos, 50), unpatched={"inconsistent-offsets"}, evidence={"zombie-rejoin": {"steps": 18}})


# KIP-320: "the zombie contributes to the min.isr requirement, but is not eligible to become leader"
OFFLINE_ISR = [{"at_s": 1.0, "fault": "zombie-isr", "target": f"leader-of:{TOPIC}/0", "window_s": 4.0,
                "params": {"solo_s": 2}}]
GUARDED = {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}
# librdkafka's and aiokafka's idempotent producers fail for good at the sequence gap an unclean
# election leaves: their consumers are judged with kafka-python's producers writing
STOCK_PRODUCERS = {"librdkafka": {"producer": "kafka-python"}, "aiokafka": {"producer": "kafka-python"}}


# 26 s: the story takes some 17 s; the producers go on writing to the follower elected after it, over
# the offsets the lost writes had
# patched only (CI time): the unpatched side's inconsistent-offsets is the smoke test's catch above;
# what this story adds is the rule's own, caught when it is turned off (`chaoskit mutate`)
@pytest.mark.chaos(faults=mix(OFFLINE_ISR, {}), workload="keyed-sequences", duration=26, epic="KIP-320",
                   feature="an offline replica kept out of the ISR", severity="critical",
                   guarantee="kip320-zombie-fencing", profiles=("patched",))
def test_an_offline_replica_never_counts_towards_min_insync(chaos):
    client = chaos.test().client
    result = chaos.run(topics=[Topic(TOPIC, 2, config=GUARDED)], drain_timeout_s=chaos.pick(patched=30, unpatched=10),
                       client_options=STOCK_PRODUCERS.get(client, {}),
                       workload_options={"producers": 3, "consumers": 2, "keys": 40, "rate": 40})
    # every step of the story: the zombie out of the ISR, offline, the follower out, the follower elected
    chaos.expect(result, unpatched={"inconsistent-offsets"}, evidence={"zombie-isr": {"steps": 4}})
