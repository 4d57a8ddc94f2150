"""KIP-694: reducing a topic's partitions. The removed partitions turn ReadOnly (no produce, reads
go on) and only after the delay None (gone): nothing acknowledged is lost, nothing is written to a
ReadOnly partition. The consumer group joins late (a backlog waits for it), after the reduction:
with the delay, the partitions stay readable until it has read them. Removing partitions at once,
without the ReadOnly phase (the unpatched side: KIP-694's `immediate_delete`), drops that backlog:
caught as `unseen`. Both sides send KIP-694's request: the partitions to delete by index. The
active controller fails as the topic grows and as the delay ends (the removal is finished by the
next one).

`test_a_stale_producer_is_refused_a_readonly_partition` tells the story `chaoskit explore` found
and shrank to one step (docs/verdicts.md): on a topic that sets `enable.ordered.delivery=false`,
KIP-253's partition count check is off, so the broker's refusal of a Produce to a ReadOnly
partition (KIP-694) is all that keeps a producer whose metadata is a few seconds old from writing
to a partition being removed. The `stale-shrink` step grows the topic, freezes the clients'
metadata and shrinks it back: `write-to-readonly` catches the refusal's absence.
"""
from __future__ import annotations

import pytest

from chaoskit.cluster import capabilities as caps
from chaoskit import Topic, admin_step, mix
from chaoskit.run.mixes import LEADER_ISOLATION, TOPIC, controller_failover

pytestmark = pytest.mark.chaos_needs(caps.KIP694)  # skipped, with the reason, on a broker without it

REMOVAL = {"delete.topic.partition.enable": True}
# what the clean claim needs: a key last written to a partition then ReadOnly sent again (it had to
# go elsewhere); the unpatched side removes at once, so it has no ReadOnly time to exercise
EVIDENCE = {"patched": {"write-to-readonly": {"displaced_sends": 1}}, "unpatched": {}}


# once the removed partitions are gone, the topic grows back under their numbers: new partitions
# for the checks (history/incarnations.py), read by the group from their start
REGROWTH = [admin_step(0.88, "expand", 6, removed_within_s=10)]


def _reduction(removal: dict) -> list:
    # created with 4: a topic never shrinks below its initial count, so it grows to 6 first; the
    # shrink waits for 8 records on partitions 4 and 5 (the growth, held up by the controller's
    # failover, may end 4 s after it starts; every producer held up at an isolated leader, twice
    # in a row, for 6 s), at most 8 s, so it still comes before the group joins at 75%: with one or
    # two, as few keys had their home there and the claim's evidence (sends displaced from a
    # ReadOnly partition) could be missing (seeds 1526824744 and 1095140532: 3, 4 and 5 s were not
    # enough in a 16 s run). The active
    # controller is killed as the topic grows and again when the delay ends, so another one
    # carries out the removal
    return [admin_step(0.1, "expand", 6), controller_failover(0.1),
            admin_step(0.3, "shrink", 4, written_within_s=8, written_records=8, **removal),
            controller_failover(0.85)]


def _run(chaos, rate: float, regrow: bool = False, config: dict | None = None):
    test = chaos.test()
    # the reduction at 30% of the run (or up to 8 s later), the group at 75% (it reads the backlog
    # in well under a second), the partitions gone at 90% (patched)
    removal = chaos.pick(patched={"delay_ms": int(test.duration_s * 600)}, unpatched={"immediate": True})
    return chaos.run(topics=[Topic(TOPIC, 4, config=config or {})],
                     broker_config=REMOVAL, controller_config=REMOVAL,
                     # unpatched, writes on partitions removed at once never come: the rest drains in seconds
                     drain_timeout_s=chaos.pick(patched=20, unpatched=8),
                     faults={**test.faults, "scripted": _reduction(removal) + (REGROWTH if regrow else [])},
                     # unpatched, a stock send to a partition being removed is refused LEADER_NOT_AVAILABLE
                     # (retriable) and then finds it gone: it never completes, do not wait long for it
                     client_options={"send_timeout_s": chaos.pick(patched=30, unpatched=10)},
                     workload_options={"producers": 2, "consumers": 1, "keys": 40, "rate": rate,
                                       "consumer_start_s": test.duration_s * 0.75})


@pytest.mark.chaos(faults=mix([], LEADER_ISOLATION, mean_interval_s=5), workload="keyed-sequences", duration=20,
                   epic="KIP-694", feature="partition reduction under leader isolation", severity="critical",
                   guarantee="kip694-mode-awareness")
def test_reduction_loses_nothing(chaos):
    chaos.expect(_run(chaos, 40), unpatched={"unseen"}, evidence=chaos.pick(**EVIDENCE))


# the explore's shrunk schedule: one stale-shrink (a growth by 2, records on it, the clients' metadata
# frozen, the shrink back; the removal 3 s later, time for the group to read what the growth took)
STALE_SHRINK = [{"at": 0.25, "fault": "stale-shrink", "target": "client", "window_s": 4.0,
                 "params": {"topic": TOPIC, "grow": 2, "delay_ms": 3000}}]


# patched only: the unpatched side removes at once whatever the topic's setting, as the case above shows
@pytest.mark.chaos(faults=mix(STALE_SHRINK, {}), workload="keyed-sequences", duration=14, epic="KIP-694",
                   feature="a stale producer and a topic without ordered delivery", severity="normal",
                   guarantee="kip694-mode-awareness", profiles=("patched",))
def test_a_stale_producer_is_refused_a_readonly_partition(chaos):
    result = chaos.run(topics=[Topic(TOPIC, 4, config={"enable.ordered.delivery": "false"})],
                       broker_config=REMOVAL, controller_config=REMOVAL, drain_timeout_s=20,
                       workload_options={"producers": 2, "consumers": 1, "keys": 40, "rate": 40})
    chaos.expect(result, evidence=EVIDENCE["patched"])


@pytest.mark.nightly
@pytest.mark.chaos(faults=mix([], LEADER_ISOLATION), workload="keyed-sequences", duration=120,
                   epic="KIP-694", feature="partition reduction under leader isolation", severity="normal",
                   guarantee="kip694-mode-awareness")
def test_reduction_loses_nothing_long(chaos):
    """The long run also grows the topic back to 6 once the removed partitions are gone."""
    chaos.expect(_run(chaos, 60, regrow=True), unpatched={"unseen"}, evidence=chaos.pick(**EVIDENCE))
