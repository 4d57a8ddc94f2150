"""KIP-320: after an unclean election truncates a partition, consumers detect it.

The unclean-election fault makes the leader of orders/0 the only in-sync replica, lets writes be
acknowledged by it alone and waits for a consumer to read them, then holds the consumers (their
application stops consuming) and kills the leader so an out-of-sync replica is elected, and lets
the consumers go on once the new leader's log has grown past where they stopped. Those
acknowledged writes are lost by design (that is what an unclean election costs), so this suite
checks what KIP-320 promises: the consumers go back to the divergence offset and read what
replaced the records they had read (or report the truncation), judged by what they delivered,
whatever client they are. Without KIP-320 (the broker tells clients no leader epoch) a stock
consumer reads on from where it stopped, past the replaced records: `truncation-undetected`.
"""
from __future__ import annotations

import pytest

from chaoskit import Topic, mix
from chaoskit.run.mixes import TOPIC

UNCLEAN = [{"at": 0.25, "fault": "unclean-election", "target": f"leader-of:{TOPIC}/0", "window_s": 6.0,
            "params": {"mode": "kill", "solo_writes": 20, "consumers": "reading"}}]
# what KIP-320 promises; lost writes, and producers' offsets going backwards after the truncation,
# are what an unclean election costs, so they are not checked here (test_kip320_zombie checks
# that clean elections lose nothing)
CHECKS = ["truncation-undetected", "duplicate"]
UNCLEAN_TOPIC = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}
# what the claim needs: a truncation that a consumer had read into (truncation-undetected, asked
# for by name, is unknown without one; this says so in the suite's own words too)
READ_INTO = {"truncation-undetected": {"replaced_reads": 1}}


# librdkafka's and aiokafka's idempotent producers fail for good at the sequence gap an unclean
# election leaves, so their consumers are judged with kafka-python's producers writing
STOCK = {"kafka-python": {}, "librdkafka": {"producer": "kafka-python"}, "aiokafka": {"producer": "kafka-python"}}


def _run(chaos, duration_rate: float, **overrides):
    # the drain cannot read back the writes the election lost: do not wait long for them
    client = chaos.test().client
    return chaos.run(**{"topics": [Topic(TOPIC, 2, config=UNCLEAN_TOPIC)], "checks": CHECKS, "drain_timeout_s": 15,
                        "client": client, "client_options": STOCK.get(client, {"truncation_policy": "reset"}),
                        "workload_options": {"producers": 2, "consumers": 2, "keys": 20, "rate": duration_rate},
                        **overrides})


@pytest.mark.chaos(faults=mix(UNCLEAN, {}), workload="keyed-sequences", duration=16,
                   epic="KIP-320", feature="unclean leader election", severity="critical",
                   guarantee="kip320-truncation-detection")
def test_truncation_is_detected(chaos):
    chaos.expect(_run(chaos, 30), unpatched={"truncation-undetected"}, evidence=READ_INTO)


@pytest.mark.nightly
@pytest.mark.chaos(faults=mix(UNCLEAN + [{**UNCLEAN[0], "at": 0.6, "target": f"leader-of:{TOPIC}/1"}], {}),
                   workload="keyed-sequences", duration=90, epic="KIP-320", guarantee="kip320-truncation-detection",
                   feature="repeated unclean leader elections", severity="critical")
def test_truncation_is_detected_long(chaos):
    chaos.expect(_run(chaos, 50), unpatched={"truncation-undetected"}, evidence=READ_INTO)



def _story(state: str) -> dict:
    return mix([{**UNCLEAN[0], "params": {**UNCLEAN[0]["params"], "consumers": state}}], {})


@pytest.mark.nightly
@pytest.mark.parametrize("state", ["idle", "restarted"])
@pytest.mark.chaos(faults=_story("idle"), workload="keyed-sequences", duration=20, epic="KIP-320",
                   feature="unclean leader election, by the consumers' state", severity="critical",
                   guarantee="kip320-truncation-detection")
def test_truncation_is_detected_whatever_the_consumers_were_doing(chaos, state):
    """The consumers idle on empty fetches while the leader changes, or stopped and restarted from
    their committed offsets afterwards (KIP-320's leader epoch in OffsetCommit and OffsetFetch)."""
    chaos.expect(_run(chaos, 30, faults=_story(state)), unpatched={"truncation-undetected"}, evidence=READ_INTO)


@pytest.mark.nightly
@pytest.mark.chaos(faults=_story("lagging"), workload="keyed-sequences", duration=20, epic="KIP-320",
                   feature="unclean leader election, consumers lagging behind it", severity="normal",
                   guarantee="kip320-truncation-detection")
def test_lagging_consumers_read_the_new_log_in_order(chaos):
    """Behind the divergence offset when the leader changes, the consumers read none of what it
    replaces: they must read the new leader's log as it is, skipping and repeating nothing."""
    result = _run(chaos, 30, checks=["poll-skip", "nonmonotonic-poll", "duplicate"])
    chaos.expect(result, evidence={"poll-skip": {"steps": 50}})
