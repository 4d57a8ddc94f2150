"""The suites' export -> check round trip (chaoskit.run.round_trip, ini chaos_export_round_trip):
silent when the exported history checks alike, naming the check when it does not."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from chaoskit.history import synthetic
from chaoskit.run import round_trip
from chaoskit.history.jepsen_kafka_write import write_jepsen_kafka
from chaoskit.suite.chaos import ChaosFailure, check_round_trip


def _history(tmp_path: Path) -> Path:
    path = tmp_path / "history.jsonl"
    ops = synthetic.generate(seed=5, events=600, plant=synthetic.KINDS).ops
    path.write_text("".join(json.dumps(o) + "\n" for o in ops))
    return path


def _losing_a_send(ops, path):
    """An export that drops the first acknowledged send: a difference the round trip must see."""
    first = next(i for i, o in enumerate(ops) if o["f"] == "send" and o["type"] == "ok")
    return write_jepsen_kafka(ops[:first] + ops[first + 1:], path)


def test_a_faithful_export_checks_alike(tmp_path: Path):
    assert round_trip.round_trip_differences(_history(tmp_path)) == []


def test_a_difference_names_the_check(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(round_trip, "write_jepsen_kafka", _losing_a_send)
    diffs = round_trip.round_trip_differences(_history(tmp_path))
    assert diffs and any(d.startswith(("unseen:", "lost-write:", "nonmonotonic-send:")) for d in diffs)


def test_the_suite_hook_fails_the_test_on_a_difference_and_keeps_the_export(tmp_path: Path, monkeypatch):
    history = _history(tmp_path)
    result = SimpleNamespace(history=history, run_dir=tmp_path, run_id="r", stats={}, replay="x", replays=["x"],
                             test=SimpleNamespace(replay="", seed=1))
    check_round_trip(result)  # faithful: silent
    assert (tmp_path / "history.edn").is_file()
    monkeypatch.setattr(round_trip, "write_jepsen_kafka", _losing_a_send)
    with pytest.raises(ChaosFailure, match="export -> check round trip differs: .*before the export"):
        check_round_trip(result)
