"""The fault mixes the suites and the demo share (chaoskit.run.mixes) make valid schedules."""
from __future__ import annotations

from chaoskit.nemesis.schedule import generate
from chaoskit.run.mixes import (BROKER_KILLS, CONTROLLER_FAULTS, LEADER_ISOLATION, STALE_METADATA, TOPIC, admin_step,
                                combine, controller_failover, mix)


def test_a_mix_with_scripted_steps_schedules_them_for_every_seed():
    spec = mix([admin_step(0.25, "expand", 6), admin_step(0.5, "shrink", 4, delay_ms=500)],
               {**LEADER_ISOLATION, **BROKER_KILLS, **STALE_METADATA})
    for seed in (1, 2):
        windows = generate({**spec, "duration_s": 20}, seed).windows
        admin = [w for w in windows if w.name == "admin"]
        assert [(w.start_s, w.params["op"], w.params["to"]) for w in admin] == [(5.0, "expand", 6), (10.0, "shrink", 4)]
        assert admin[1].params == {"op": "shrink", "topic": TOPIC, "to": 4, "delay_ms": 500}
        assert {w.name for w in windows} - {"admin"} <= {"partition", "kill", "stale-metadata",
                                                          "freeze-client-metadata"}
        assert all(w.stop_s <= 20 - spec["quiet_end_s"] or w.name == "admin" for w in windows)


def test_controller_faults_join_the_broker_kills_and_failover_steps_target_the_active_controller():
    faults = combine(LEADER_ISOLATION, BROKER_KILLS, CONTROLLER_FAULTS)
    assert faults["kill"]["targets"] == ["random-broker", "active-controller"] and faults["kill"]["weight"] == 2
    assert faults["partition"]["targets"][-1] == "active-controller" and "pause" in faults
    assert BROKER_KILLS["kill"]["targets"] == ["random-broker"]  # the mixes combined are left as they were
    steps = [controller_failover(0.2), controller_failover(0.5, "partition")]
    windows = generate({**mix(steps, faults), "duration_s": 20}, 3).windows
    scripted = [(w.start_s, w.name, w.target, w.stop_s - w.start_s) for w in windows if w.start_s in (4.0, 10.0)
                and w.target == "active-controller"]
    assert scripted == [(4.0, "kill", "active-controller", 1.5), (10.0, "partition", "active-controller", 6.0)]
    drawn = {w.target for w in generate({**mix([], faults), "duration_s": 120}, 5).windows}
    assert "active-controller" in drawn and "random-broker" in drawn
