"""The seeded fault schedule (chaoskit.nemesis.schedule): determinism, bounds, validation."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskit.roles import Fault
from chaoskit.nemesis.schedule import SCHEDULE_FILE, Schedule, ScheduleSpec, ScheduleSpecError, generate

SPEC = {
    "duration_s": 120,
    "mean_interval_s": 4,
    "window_s": [1, 5],
    "quiet_end_s": 10,
    "faults": {
        "partition": {"weight": 3, "targets": ["leader-of:orders/0", "random-broker", "follower-of:orders/1"]},
        "latency": {"weight": 1, "targets": ["client"], "overlap": True,
                    "params": {"ms": {"uniform": [50, 500]}, "jitter": {"choice": [0, 10, 20]}, "fixed": "yes"}},
        "kill": {"weight": 1, "targets": ["active-controller", "broker:2"], "window_s": [2, 8]},
    },
}


def test_same_seed_and_spec_give_the_same_bytes():
    first = generate(SPEC, 42).to_json()
    assert first == generate(copy.deepcopy(SPEC), 42).to_json()
    # key order and int/float spelling of the spec do not matter
    reordered = dict(reversed(list(SPEC.items())), faults=dict(reversed(list(SPEC["faults"].items()))))
    reordered["duration_s"] = 120.0
    assert generate(reordered, 42).to_json() == first
    assert len(generate(SPEC, 42).windows) > 10  # a real schedule, not an empty one


def test_different_seeds_give_different_schedules():
    texts = {generate(SPEC, seed).to_json() for seed in range(20)}
    assert len(texts) == 20


def test_bytes_do_not_depend_on_the_process(tmp_path: Path):
    # a fresh interpreter with another hash seed writes the very same file
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    code = ("import json,sys; from chaoskit.nemesis.schedule import generate; "
            "sys.stdout.write(generate(json.load(open(sys.argv[1])), 42).to_json())")
    out = subprocess.run([sys.executable, "-c", code, str(spec_file)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout == generate(SPEC, 42).to_json()


def test_to_json_is_canonical_json_with_sorted_keys():
    text = generate(SPEC, 3).to_json()
    data = json.loads(text)
    assert list(data) == sorted(data) and data["seed"] == 3 and data["format"] == 1
    row = data["windows"][0]
    assert list(row) == sorted(row)
    assert all(round(w["start_s"], 3) == w["start_s"] and round(w["stop_s"], 3) == w["stop_s"] for w in data["windows"])


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**63),
    duration=st.floats(1, 300),
    mean=st.floats(0.05, 20),
    lo=st.floats(0.01, 10),
    extra=st.floats(0, 10),
    quiet_share=st.floats(0, 0.9),
)
def test_windows_stay_within_bounds(seed, duration, mean, lo, extra, quiet_share):
    spec = copy.deepcopy(SPEC)
    spec.update(duration_s=duration, mean_interval_s=mean, window_s=[lo, lo + extra], quiet_end_s=duration * quiet_share)
    schedule = generate(spec, seed)
    end = round(duration - duration * quiet_share, 3)
    mixes = {m.name: m for m in schedule.spec.faults}
    last_stop: dict[str, float] = {}
    assert [w.id for w in schedule.windows] == list(range(len(schedule.windows)))
    assert [w.start_s for w in schedule.windows] == sorted(w.start_s for w in schedule.windows)
    for w in schedule.windows:
        assert isinstance(w, Fault)
        assert 0 < w.start_s < w.stop_s <= end, w  # every fault heals by the run's end
        lo_w, hi_w = mixes[w.name].window_s or (lo, lo + extra)
        assert w.stop_s - w.start_s <= hi_w + 0.001
        assert w.target in mixes[w.name].targets
        assert 0 <= w.pick < 2**31
        if not mixes[w.name].overlap:  # windows of one fault kind never overlap
            assert w.start_s >= last_stop.get(w.name, 0.0), w
            last_stop[w.name] = w.stop_s


def test_params_are_drawn_within_their_ranges():
    latency = [w for w in generate(SPEC, 5).windows if w.name == "latency"]
    assert latency
    assert all(50 <= w.params["ms"] <= 500 and w.params["jitter"] in (0, 10, 20) for w in latency)
    assert all(w.params["fixed"] == "yes" for w in latency)
    assert len({w.params["ms"] for w in latency}) > 1


def test_overlap_is_only_allowed_where_the_spec_says_so():
    spec = {"duration_s": 200, "mean_interval_s": 1, "window_s": [5, 10],
            "faults": {"slow": {"weight": 1, "targets": ["client"], "overlap": True},
                       "cut": {"weight": 1, "targets": ["random-broker"]}}}
    windows = generate(spec, 9).windows

    def overlaps(name):
        ws = [w for w in windows if w.name == name]
        return any(b.start_s < a.stop_s for a, b in zip(ws, ws[1:]))

    assert overlaps("slow") and not overlaps("cut")


def test_weights_shape_the_mix():
    spec = {"duration_s": 2000, "mean_interval_s": 2, "window_s": [0.1, 0.2], "faults": {
        "often": {"weight": 9, "targets": ["client"]}, "rare": {"weight": 1, "targets": ["client"]}}}
    counts = Counter(w.name for w in generate(spec, 1).windows)
    assert counts["often"] > 5 * counts["rare"] > 0


def test_write_and_read_back(tmp_path: Path):
    schedule = generate(SPEC, 11)
    path = schedule.write(tmp_path)
    assert path == tmp_path / SCHEDULE_FILE and path.read_text() == schedule.to_json()
    assert Schedule.from_json(path.read_text()) == schedule
    assert ScheduleSpec.from_dict(schedule.spec.to_dict()) == schedule.spec


def test_an_edited_schedule_file_is_refused(tmp_path: Path):
    data = json.loads(generate(SPEC, 11).to_json())
    data["windows"][0]["stop_s"] += 1
    with pytest.raises(ScheduleSpecError, match="differ from what its spec and seed generate"):
        Schedule.from_json(json.dumps(data))
    with pytest.raises(ScheduleSpecError, match="not JSON"):
        Schedule.from_json("{nope")
    with pytest.raises(ScheduleSpecError, match="not a chaoskit schedule file"):
        Schedule.from_json('{"windows": []}')


def _with(path: str, value):
    spec = copy.deepcopy(SPEC)
    *parents, last = path.split(".")
    node = spec
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return spec


_DELETE = object()


@pytest.mark.parametrize("path,value,message", [
    ("duration_s", _DELETE, r"missing field\(s\) \['duration_s'\]"),
    ("duraton_s", 5, r"unknown field\(s\) \['duraton_s'\]; allowed"),
    ("duration_s", 0, "duration_s must be > 0, got 0"),
    ("duration_s", float("nan"), "duration_s must be a finite number"),
    ("duration_s", True, "duration_s must be a finite number, got True"),
    ("mean_interval_s", "5", "mean_interval_s must be a finite number, got '5'"),
    ("mean_interval_s", 0.0001, "raise mean_interval_s"),
    ("window_s", [5, 1], r"window_s must satisfy 0 < min <= max, got \[5, 1\]"),
    ("window_s", 3, r"window_s must be \[min, max\], got 3"),
    ("quiet_end_s", 500, "quiet_end_s .* must be below duration_s"),
    ("faults", {}, "faults must be a non-empty mapping"),
    ("faults.kill.weight", -1, "faults.kill.weight must be > 0, got -1"),
    ("faults.kill.weight", _DELETE, r"faults.kill: missing field\(s\) \['weight'\]"),
    ("faults.kill.targets", [], "faults.kill.targets must be a non-empty list"),
    ("faults.kill.targets", ["leader:orders/0"], "faults.kill.targets: unknown target kind 'leader'"),
    ("faults.kill.targets", ["leader-of:orders"], r"needs <topic>/<partition>, e.g. leader-of:orders/0"),
    ("faults.kill.overlap", "no", "faults.kill.overlap must be true or false"),
    ("faults.kill.window_s", [0, 1], "faults.kill.window_s must satisfy 0 < min <= max"),
    ("faults.kill.every", 3, r"faults.kill: unknown field\(s\) \['every'\]"),
    ("faults.latency.params.ms", {"uniform": [5]}, r"faults.latency.params.ms.uniform must be \[lo, hi\]"),
    ("faults.latency.params.ms", {"uniform": [9, 5]}, "lo <= hi"),
    ("faults.latency.params.ms", {"choice": []}, "non-empty list"),
    ("faults.latency.params.ms", {"uniform": [1, 2], "x": 1}, r"exactly \{\"uniform\""),
    ("faults.latency.params.ms", object(), "must be plain JSON data"),
])
def test_bad_specs_are_refused_with_a_clear_message(path, value, message):
    with pytest.raises(ScheduleSpecError, match=message):
        generate(_with(path, value), 1)


def test_a_bad_seed_is_refused():
    with pytest.raises(ScheduleSpecError, match="seed must be an int"):
        generate(SPEC, "42")  # type: ignore[arg-type]


# --- scripted steps: fixed windows a suite needs whatever the seed ---------------------------------
STEPS = [{"at": 0.25, "fault": "admin", "target": "client", "params": {"op": "expand", "by": 2}, "window_s": 1},
         {"at_s": 45, "fault": "admin", "target": "client", "params": {"op": "shrink", "to": 6}, "window_s": 1}]


def test_scripted_steps_open_at_their_times_for_every_seed():
    spec = {**SPEC, "scripted": STEPS}
    for seed in (1, 2, 3):
        admin = [w for w in generate(spec, seed).windows if w.name == "admin"]
        assert [(w.start_s, w.stop_s, w.params["op"]) for w in admin] == [(30.0, 31.0, "expand"), (45.0, 46.0, "shrink")]


def test_scripted_steps_leave_the_random_windows_as_they_were():
    plain = [w for w in generate(SPEC, 7).windows]
    with_steps = [w for w in generate({**SPEC, "scripted": STEPS}, 7).windows if w.name != "admin"]
    key = lambda w: (w.start_s, w.stop_s, w.name, w.target, dict(w.params), w.pick)  # noqa: E731
    assert [key(w) for w in plain] == [key(w) for w in with_steps]


def test_a_schedule_of_scripted_steps_only_round_trips():
    schedule = generate({**SPEC, "faults": {}, "scripted": STEPS}, 7)
    assert [w.name for w in schedule.windows] == ["admin", "admin"]
    assert Schedule.from_json(schedule.to_json()).to_json() == schedule.to_json()


def test_a_scripted_step_with_its_own_pick_keeps_it_and_leaves_the_others_picks_alone():
    own = [{**STEPS[0], "pick": 42}, STEPS[1]]
    picks = [w.pick for w in generate({**SPEC, "faults": {}, "scripted": STEPS}, 7).windows]
    with_own = [w.pick for w in generate({**SPEC, "faults": {}, "scripted": own}, 7).windows]
    assert with_own == [42, picks[1]]  # deleting or moving a step with a pick changes no other step's node
    schedule = generate({**SPEC, "faults": {}, "scripted": own}, 7)
    assert Schedule.from_json(schedule.to_json()).to_json() == schedule.to_json()


@pytest.mark.parametrize("step, message", [
    ({"at_s": 1, "fault": "kill", "target": "client", "window_s": 1, "pick": -1}, "pick must be an int"),
    ({"fault": "admin", "target": "client", "window_s": 1}, "exactly one of `at`"),
    ({"at": 1.5, "fault": "admin", "target": "client", "window_s": 1}, "fraction of the run"),
    ({"at_s": 130, "fault": "admin", "target": "client", "window_s": 1}, "not before the run's end"),
    ({"at": 0.1, "fault": "admin", "target": "nobody-knows", "window_s": 1}, "target"),
])
def test_a_bad_scripted_step_says_what_to_fix(step, message):
    with pytest.raises(ScheduleSpecError, match=message):
        generate({**SPEC, "scripted": [step]}, 1)
