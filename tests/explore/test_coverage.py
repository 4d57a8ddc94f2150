"""Coverage (chaoskit.explore.coverage) on recorded runs and on planted lines: the protocol states a
run reached, as labels a search can count."""
from __future__ import annotations

import json

from chaoskit.explore import coverage as cov


def test_a_run_of_expansion_coordinator_kill_and_shrink_reaches_its_gates_modes_and_elections(recorded):
    c = cov.of_run(recorded("rec-gates"))
    f = c.features
    assert {"fault:admin:expand#1", "fault:kill:coordinator#1", "fault:admin:shrink:drained#1"} <= f
    assert "gate-opened:expansion:own#4-7" in f  # the new partitions' gates, opened by their owners' positions
    assert {"gate-waiting:deletion#1", "gate-opened:deletion:drained-own#1"} <= f
    assert "modes:RW>RO" in f  # partition 5: created by the expansion, marked by the shrink
    assert "coordinator:moved#2" in f and any(x.startswith("election:clean#") for x in f)
    assert any(x.startswith("at-election:clean:") for x in f)
    assert "with:admin+kill" in f
    assert "evidence:write-to-readonly:displaced_sends#1" in f
    assert any(x.startswith("then:fault:kill>") for x in f)
    assert all(e.topic in (None, "orders", "__consumer_offsets") for e in c.events)


def test_a_run_of_an_unclean_election_reaches_it_and_the_truncation_it_causes(recorded):
    c = cov.of_run(recorded("rec-unclean"))
    f = c.features
    assert {"fault:unclean-election:reading#1", "election:unclean#1", "log:truncated#1"} <= f
    assert any(e.label == "election:unclean" and e.topic == "orders" and e.partition == 0 for e in c.events)
    assert any(x.startswith("at-election:unclean:") for x in f)


def test_a_run_without_node_logs_or_results_still_gives_the_history_s_states(recorded, tmp_path):
    run = recorded("rec-gates")
    for log in run.glob("*.log"):
        log.unlink()
    (run / "results.json").unlink()
    f = cov.of_run(run).features
    assert "fault:admin:expand#1" in f and not any(x.startswith("election:") for x in f)
    assert cov.of_run(tmp_path / "nowhere").features == frozenset()


def test_buckets_count_like_afl():
    assert [cov.bucket(n) for n in (1, 2, 3, 4, 7, 8, 16, 40, 500)] == \
        ["1", "2", "3", "4-7", "4-7", "8-15", "16-31", "32-127", "128+"]


def test_log_lines_become_events_of_the_run_s_topics_only():
    lines = ["2026-01-01 00:00:10,500 INFO chaoskit.controller: orders-x1-2: leader 1 -> 3 at epoch 4, isr [3] (UNCLEAN)",
             "2026-01-01 00:00:10,600 INFO chaoskit.controller: other-1: leader 1 -> 3 at epoch 4, isr [3]",
             "2026-01-01 00:00:11,000 INFO chaoskit.controller.topic_changes: orders-x1: partitions [4, 5] marked "
             "for deletion (ReadOnly, removed once drained), leaderEpochBeforeDeletion {0: 1}",
             "not a log line"]
    import time
    anchor = time.mktime(time.strptime("2026-01-01 00:00:10", "%Y-%m-%d %H:%M:%S"))
    events = cov.log_events(lines, cov.CONTROLLER_EVENTS, anchor, {"orders-x1"})
    assert [(e.label, e.topic, e.partition, e.t) for e in events] == [
        ("election:unclean", "orders-x1", 2, 0.5), ("mode:RO", "orders-x1", 4, 1.0), ("mode:RO", "orders-x1", 5, 1.0)]


def test_a_gate_waiting_while_the_coordinator_moves_is_a_state_of_its_own():
    E = cov.Event
    events = [E(1, "gate-waiting:expansion", "t", 4, 3), E(2, "coordinator:moved"), E(3, "gate-opened:expansion:peer", "t", 4, 3)]
    assert cov.gate_waits_across_moves(events) == {"gate-wait:expansion:coordinator-moved"}
    assert cov.gate_waits_across_moves([events[0], events[2], events[1]]) == set()


def test_consumers_at_an_election_are_reading_lagging_held_or_restarted():
    sends = [{"f": "send", "type": "ok", "topic": "t", "partition": 0, "offset": o, "time_ns": int(o * 1e8)}
             for o in range(50)]
    polls = [{"f": "poll", "type": "ok", "topic": "t", "time_ns": int(1e9), "value": [[0, 5, "k", 1, 0]]}]
    E = cov.Event
    assert cov.states_at_elections([E(1.2, "election:clean", "t", 0)], sends + polls, {"t"}) == \
        {"at-election:clean:reading"}
    assert cov.states_at_elections([E(4.0, "election:clean", "t", 0)], sends + polls, {"t"}) == \
        {"at-election:clean:lagging"}
    held = [E(3.5, "fault:clients:idle")]
    assert cov.states_at_elections(held + [E(4.0, "election:unclean", "t", 0)], sends + polls, {"t"}) == \
        {"at-election:unclean:held"}


def test_the_verdict_adds_its_evidence_and_its_anomalies():
    verdict = {"results": {"key-order": {"valid": False, "counts": {"anomalies": 3, "moved_pairs": 9}},
                           "unseen": {"valid": True, "counts": {"acked": 0}}}}
    assert cov.verdict_features(json.loads(json.dumps(verdict))) == {"evidence:key-order:moved_pairs#8-15",
                                                                     "anomaly:key-order"}


def test_the_topic_s_settings_and_the_steps_under_them_are_states(recorded):
    f = cov.of_run(recorded("rec-unclean")).features
    assert {"setting:unclean.leader.election.enable=true", "setting:min.insync.replicas=1"} <= f
    assert "under:unclean.leader.election.enable=true:fault:unclean-election:reading" in f
