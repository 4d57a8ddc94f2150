"""Schedules as data (chaoskit.explore.steps): JSON both ways, a stable name, readable lines, and the
ChaosTest they become, which the fault schedule plays step for step."""
from __future__ import annotations

import json

import pytest

from chaoskit.explore.steps import Step, StepSchedule, to_test
from chaoskit.nemesis.schedule import generate
from chaoskit.run.chaostest import ChaosTest

EXPAND = Step("admin", 2.0, 0.5, "client", {"op": "expand", "topic": "orders", "to": 6}, pick=17)
KILL = Step("kill", 1.0, 1.5, "leader-of:orders/2", {}, pick=5)
BATCH = Step("expand-batch", 3.0, 1.0, "client", {"topics": {"orders": 7, "__consumer_offsets": 6}}, pick=9)


def test_a_schedule_keeps_its_steps_in_time_order_and_reads_back_from_json():
    s = StepSchedule((EXPAND, KILL), {"min.insync.replicas": "2"})
    assert [x.fault for x in s.steps] == ["kill", "admin"]
    back = StepSchedule.from_json(json.loads(json.dumps(s.to_json())))
    assert back == s and back.digest == s.digest


def test_the_name_of_a_schedule_changes_with_any_step_or_setting():
    s = StepSchedule((EXPAND,), {})
    assert s.digest != StepSchedule((EXPAND, KILL), {}).digest
    assert s.digest != StepSchedule((EXPAND,), {"min.insync.replicas": "2"}).digest
    assert s.digest == StepSchedule((EXPAND,), {}).digest


def test_a_step_reads_as_a_line():
    assert StepSchedule((EXPAND, KILL), {"cleanup.policy": "compact"}).lines() == [
        "settings: cleanup.policy=compact",
        "  1.00 s  kill leader-of:orders/2 for 1.5 s",
        "  2.00 s  expand orders to 6 partitions for 0.5 s",
    ]


def test_a_bad_step_is_refused_with_what_it_may_hold():
    with pytest.raises(ValueError, match="fault, at_s, window_s"):
        Step.from_json({"fault": "kill", "at_s": 1, "window_s": 1, "target": "client", "when": 3})
    with pytest.raises(ValueError, match="settings"):
        StepSchedule.from_json([])


def test_the_test_renames_its_topics_everywhere_and_plays_every_step_with_its_own_pick():
    base = ChaosTest("xp", duration_s=10, workload_options={"topics": ["orders"]})
    s = StepSchedule((EXPAND, KILL, BATCH), {"unclean.leader.election.enable": "true"})
    test = to_test(base, s, "xp-x3", seed=99, suffix="-x3")
    assert [t.name for t in test.topics] == ["orders-x3"]
    assert test.topics[0].config == {"unclean.leader.election.enable": "true"}
    assert test.workload_options["topics"] == ["orders-x3"] and test.seed == 99 and test.name == "xp-x3"
    windows = generate({**test.faults, "duration_s": test.duration_s}, test.seed).windows
    assert [(w.name, w.start_s, w.target, w.pick) for w in windows] == [
        ("kill", 1.0, "leader-of:orders-x3/2", 5), ("admin", 2.0, "client", 17), ("expand-batch", 3.0, "client", 9)]
    assert windows[1].params["topic"] == "orders-x3"
    assert windows[2].params["topics"] == {"orders-x3": 7, "__consumer_offsets": 6}


def test_a_schedule_without_a_suffix_keeps_the_base_names_a_replay_uses():
    test = to_test(ChaosTest("xp"), StepSchedule((KILL,)), "xp-finding", seed=1)
    assert test.topics[0].name == "orders" and test.faults["scripted"][0]["target"] == "leader-of:orders/2"


def test_a_schedule_of_no_step_is_a_run_without_faults():
    assert to_test(ChaosTest("xp"), StepSchedule(), "xp-0", seed=1).faults is None
