"""Parquet histories: typed columns, the poll records exploded for Spark, and a lossless round trip."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from chaoskit.history.reader import History
from chaoskit.history import parquet, synthetic


def test_round_trip_keeps_every_op_and_extra_keys(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(parquet, "ROWS", 500)  # several row groups
    ops = synthetic.generate(seed=1, events=2000, plant=["key-order"]).ops
    ops[3]["custom"] = {"kept": True}
    path = History(ops).to_parquet(tmp_path / "h.parquet")
    assert pq.ParquetFile(path).num_row_groups > 1
    again = History.from_path(path)
    assert again.ops == ops and again.source == path


def test_poll_records_are_typed(tmp_path: Path):
    op = {"index": 0, "process": 4, "type": "ok", "f": "poll", "topic": "t",
          "value": [[1, 7, "k1", [0, "k1", 3], 2], [1, 8, None, None, None]]}
    table = pq.read_table(History([op]).to_parquet(tmp_path / "h.parquet"))
    assert table.column("records").to_pylist() == [[
        {"partition": 1, "offset": 7, "key": "k1", "value": '[0,"k1",3]', "leader_epoch": 2},
        {"partition": 1, "offset": 8, "key": None, "value": None, "leader_epoch": None}]]
    assert table.column("process").to_pylist() == ["4"]
