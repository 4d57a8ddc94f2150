"""The partition state machine's decisions: new partitions, clean and unclean election, ISR shrink."""
from __future__ import annotations

from chaoskit.controller.partition_state import initial_state, next_state, unclean_enabled
from chaoskit.protocol.zk_layout import NO_LEADER, PartitionState

CE = 7  # the deciding controller's epoch


def state(leader: int, epoch: int, isr: list[int], pe: int = 3) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=epoch, isr=isr, controller_epoch=1, partition_epoch=pe,
                          extra={"mode": "ReadWrite"})


def test_new_partition_is_led_by_the_first_live_replica_at_epoch_zero():
    s = initial_state([3, 1, 2], live={1, 2}, controller_epoch=CE)
    assert s is not None
    assert (s.leader, s.leader_epoch, s.isr, s.controller_epoch, s.partition_epoch) == (1, 0, [1, 2], CE, 0)
    assert initial_state([3, 1], live={2}, controller_epoch=CE) is None


def test_nothing_changes_while_leader_and_isr_are_live():
    assert next_state(state(1, 4, [1, 2]), [1, 2, 3], {1, 2, 3}, False, CE) is None


def test_dead_follower_leaves_the_isr_at_a_new_epoch_without_a_leader_change():
    # the bump is what lets the leader fence the lost replica's fetches (KIP-320, KAFKA-6880)
    d = next_state(state(1, 4, [1, 2, 3]), [1, 2, 3], {1, 3}, False, CE)
    assert d is not None and not d.leader_changed
    assert (d.state.leader, d.state.leader_epoch, d.state.isr) == (1, 5, [1, 3])
    assert (d.state.partition_epoch, d.state.controller_epoch) == (4, CE)


def test_clean_election_takes_the_first_live_isr_member_in_assignment_order_and_bumps_the_epoch():
    d = next_state(state(1, 4, [1, 3, 2]), [1, 2, 3], {2, 3}, False, CE)
    assert d is not None and d.leader_changed and not d.unclean
    assert (d.state.leader, d.state.leader_epoch, d.state.isr) == (2, 5, [3, 2])
    assert d.state.extra == {"mode": "ReadWrite"}  # fields of later issues survive


def test_out_of_sync_replica_is_not_elected_without_unclean():
    d = next_state(state(1, 4, [1]), [1, 2, 3], {2, 3}, False, CE)
    assert d is not None and d.leader_changed
    assert (d.state.leader, d.state.leader_epoch, d.state.isr) == (NO_LEADER, 5, [1])
    # already offline: stays so, no new epoch
    assert next_state(d.state, [1, 2, 3], {2, 3}, False, CE) is None


def test_unclean_election_takes_a_live_out_of_sync_replica():
    d = next_state(state(1, 4, [1]), [1, 2, 3], {3}, True, CE)
    assert d is not None and d.unclean
    assert (d.state.leader, d.state.leader_epoch, d.state.isr) == (3, 5, [3])


def test_offline_partition_comes_back_when_its_last_isr_member_returns():
    offline = state(NO_LEADER, 5, [1])
    d = next_state(offline, [1, 2, 3], {1, 2}, False, CE)
    assert d is not None and (d.state.leader, d.state.leader_epoch, d.state.isr) == (1, 6, [1])


def test_topic_config_overrides_the_cluster_default():
    assert unclean_enabled({"unclean.leader.election.enable": "true"}, False)
    assert not unclean_enabled({"unclean.leader.election.enable": "false"}, True)
    assert unclean_enabled({}, True) and not unclean_enabled({}, False)
