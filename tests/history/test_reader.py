"""History.from_path: formats by suffix, problems by line, clear errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoskit.history.reader import History, HistoryError


def test_jsonl_with_a_truncated_last_line_and_a_bad_op(tmp_path: Path):
    path = tmp_path / "h.jsonl"
    good = {"process": 0, "type": "invoke", "f": "send", "value": [0, "k", 1], "custom": 5}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"process": 0, "type": "done", "f": "x"}) + "\n"
                    + json.dumps(good)[:10])
    h = History.from_path(path)
    assert h.ops == [{**good, "index": 0}]
    assert h.problems[0].startswith("line 2: type must be one of")
    assert h.problems[1].startswith("line 3: truncated")


def test_malformed_poll_records_are_problems(tmp_path: Path):
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps({"process": 1, "type": "ok", "f": "poll", "value": [[0, "x"]]}) + "\n")
    assert "a polled record is" in History.from_path(path).problems[0]


def test_unknown_suffix_and_missing_file(tmp_path: Path):
    odd = tmp_path / "h.csv"
    odd.write_text("")
    with pytest.raises(HistoryError, match="--format"):
        History.from_path(odd)
    with pytest.raises(HistoryError, match="no history at"):
        History.from_path(tmp_path / "absent.jsonl")
    ops = [{"process": 0, "type": "ok", "f": "x", "value": 1}]
    odd.write_text(json.dumps(ops[0]) + "\n")
    assert History.from_path(odd, format="jsonl").ops[0]["value"] == 1


def test_a_parquet_history_is_read_only_when_its_ops_are_asked_for(tmp_path: Path):
    ops = [{"process": 0, "type": "invoke", "f": "send", "value": [0, "k", 1]},
           {"process": 1, "type": "ok", "f": "coordinator", "value": {"group": "g", "partition": 1}}]
    path = History(ops).to_parquet(tmp_path / "h.parquet")
    h = History.from_path(path)
    assert len(h) == 2 and h.kinds() == {"send", "coordinator"} and h._ops is None
    assert h.ops == [{**op, "index": i} for i, op in enumerate(ops)]
