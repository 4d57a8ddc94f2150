"""Availability figures from a history (chaoskit.history.availability): rates in and out of fault
windows, and a stall after a heal found (and not found where the workload went on)."""
from __future__ import annotations

from chaoskit.history.availability import availability, describe

S = 1_000_000_000


def acks(*seconds):
    ops = []
    for t in seconds:
        ops += [{"process": 0, "type": "invoke", "f": "send", "time_ns": int(t * S) - 1000},
                {"process": 0, "type": "ok", "f": "send", "time_ns": int(t * S)}]
    return ops


def window(n, start, stop, fault="partition"):
    value = {"fault": fault, "window": n}
    return [{"process": "nemesis", "type": "info", "f": "start", "time_ns": int(start * S), "value": value},
            {"process": "nemesis", "type": "info", "f": "stop", "time_ns": int(stop * S), "value": value}]


def test_rates_in_each_window_and_overall():
    ops = acks(*[i / 10 for i in range(0, 100)]) + window(1, 2.0, 4.0)  # 10/s throughout, 2 s window
    figures = availability(sorted(ops, key=lambda o: o["time_ns"]))
    assert figures["acked"] == 100 and 9.9 <= figures["acked_per_s"] <= 10.2
    assert figures["windows"] == [{"window": 1, "fault": "partition", "seconds": 2.0, "acked_per_s": 10.5}]
    assert figures["stalled"] == []


def test_a_stall_after_a_heal_is_found_with_how_long_it_lasted():
    ops = acks(0.5, 1.0, 1.5, 9.0, 9.5) + window(2, 1.6, 2.0, "kill")  # nothing acknowledged 2.0 .. 9.0
    figures = availability(sorted(ops, key=lambda o: o["time_ns"]))
    assert figures["stalled"] == [{"window": 2, "fault": "kill", "for_s": 7.0, "recovered": True}]
    assert "STALLED 7 s after kill #2 healed" in describe(figures)


def test_no_acknowledgement_after_a_heal_to_the_producers_last_try_is_a_stall_that_never_recovered():
    tries = [{"process": 0, "type": "invoke", "f": "send", "time_ns": int(t * S)} for t in (4, 8, 12)]
    ops = acks(0.5, 1.0) + window(1, 1.5, 2.0) + tries
    figures = availability(sorted(ops, key=lambda o: o["time_ns"]))
    assert figures["stalled"] == [{"window": 1, "fault": "partition", "for_s": 10.0, "recovered": False}]
    late = acks(0.5, 1.0) + window(1, 3.0, 4.0)  # healed after the producers' last try: nothing to judge
    assert availability(sorted(late, key=lambda o: o["time_ns"]))["stalled"] == []
