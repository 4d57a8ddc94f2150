"""KIP-320: a zombie broker (its ZooKeeper session gone, still serving) is fenced, and with clean
elections no acknowledged write is lost.

The zombie fault cuts a leader's ZooKeeper links: the controller moves leadership while the old
leader keeps serving and fetching. Patched leaders fence its fetches by leader epoch and it may
not rejoin the ISR while the controller holds it offline; every acknowledged write is read back.

Only the patched profile runs here. With acks=all and min.insync.replicas=2 a zombie leader cannot
acknowledge a write in either profile (its ISR cannot shrink without ZooKeeper, and the other
replicas follow the new leader), so the unpatched run also checks clean and would prove nothing;
the loss KIP-320 prevents needs a zombie *follower* let back into the ISR and then elected, a
sequence this suite does not stage yet (see the project notes).
"""
from __future__ import annotations

import pytest

from chaoskit.fault_mixes import LEADER_ISOLATION, TOPIC, mix
from chaoskit.runner import Topic

ZOMBIES = {"zombie": {"weight": 2, "targets": [f"leader-of:{TOPIC}/0", f"leader-of:{TOPIC}/1"],
                      "window_s": [4.0, 6.0]}}
DURABLE = {"min.insync.replicas": "2"}


def _run(chaos, rate: float):
    return chaos.run(topics=[Topic(TOPIC, 2, config=DURABLE)],
                     client=chaos.pick(patched="ordered", unpatched="kafka-python"),
                     workload_options={"producers": 2, "consumers": 2, "keys": 20, "rate": rate})


@pytest.mark.chaos(faults=mix([], ZOMBIES, mean_interval_s=3), workload="keyed-sequences", duration=16,
                   epic="KIP-320", feature="zombie brokers", severity="critical", profiles=("patched",))
def test_zombies_are_fenced(chaos):
    chaos.expect(_run(chaos, 30))


@pytest.mark.nightly
@pytest.mark.chaos(faults=mix([], {**ZOMBIES, **LEADER_ISOLATION}), workload="keyed-sequences", duration=120,
                   epic="KIP-320", feature="zombie brokers and leader isolation", severity="critical",
                   profiles=("patched",))
def test_zombies_are_fenced_long(chaos):
    chaos.expect(_run(chaos, 50))
