"""The fault mixes the suites and the demo share (chaoskit.run.mixes) make valid schedules."""
from __future__ import annotations

from chaoskit.nemesis.schedule import generate
from chaoskit.run.mixes import BROKER_KILLS, LEADER_ISOLATION, STALE_METADATA, TOPIC, admin_step, mix


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
