"""The probe client's reading of a FindCoordinator answer: which `__consumer_offsets` partition
stands behind the node it names (plugins/clients/probe.py)."""
from __future__ import annotations

from chaoskit.protocol.topics import partition_for
from chaoskit_plugins.clients.probe import ProbeClient


def _group_moving(old: int, new: int) -> str:
    return next(g for g in (f"g{i}" for i in range(1000)) if partition_for(g, old) != partition_for(g, new))


def test_one_count_gives_the_groups_partition_when_its_leader_answered():
    probe = ProbeClient()
    probe.counts = {5}
    g = "g1"
    leaders = {p: 1 + p % 3 for p in range(5)}
    assert probe.partition_behind(g, leaders[partition_for(g, 5)], leaders) == partition_for(g, 5)
    other = next(n for n in (1, 2, 3) if n != leaders[partition_for(g, 5)])
    assert probe.partition_behind(g, other, leaders) is None  # that node leads no partition of the group


def test_after_an_expansion_the_answer_says_which_count_the_broker_used():
    probe = ProbeClient()
    probe.counts = {5, 10}
    g = _group_moving(5, 10)
    old, new = partition_for(g, 5), partition_for(g, 10)
    leaders = {p: 9 for p in range(10)}
    leaders[old], leaders[new] = 1, 2
    assert probe.partition_behind(g, 1, leaders) == old
    assert probe.partition_behind(g, 2, leaders) == new
    leaders[new] = 1  # one node leads both candidates: the answer cannot tell them apart
    assert probe.partition_behind(g, 1, leaders) is None
