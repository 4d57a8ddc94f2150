"""Parquet histories: typed columns, the poll records exploded for Spark, a lossless round trip, and
the streamed conversion of a JSONL history."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_poll_records_are_rows_of_their_own_typed_with_their_poll(tmp_path: Path):
    op = {"index": 0, "process": 4, "type": "ok", "f": "poll", "topic": "t",
          "value": [[1, 7, "k1", [0, "k1", 3], 2], [1, 8, None, None, None], [2, 9, 7, {"b": 1, "a": [2]}, "x"]]}
    table = pq.read_table(History([op]).to_parquet(tmp_path / "h.parquet"))
    rows = table.select(["index", "process", "f", "type", "topic", "partition", "offset", "key", "value",
                         "leader_epoch", "pos"]).to_pylist()
    assert rows[1:] == [
        {"index": 0, "process": "4", "f": "poll", "type": "ok", "topic": "t", "partition": 1, "offset": 7, "key": "k1",
         "value": '[0,"k1",3]', "leader_epoch": 2, "pos": 0},
        {"index": 0, "process": "4", "f": "poll", "type": "ok", "topic": "t", "partition": 1, "offset": 8, "key": None,
         "value": None, "leader_epoch": None, "pos": 1},
        # a key as text, a value as its canonical text (keys sorted), an epoch that is not a number dropped
        {"index": 0, "process": "4", "f": "poll", "type": "ok", "topic": "t", "partition": 2, "offset": 9, "key": "7",
         "value": '{"a":[2],"b":1}', "leader_epoch": None, "pos": 2}]
    assert rows[0]["pos"] is None and table.schema.field("offset").type == "int64"
    again = History.from_path(tmp_path / "h.parquet")
    assert again.ops == [op] and len(again) == 1


def test_rows_over_two_gigabytes_of_text_become_a_table_of_several_batches():
    import pyarrow as pa

    schema = pa.schema([("index", pa.int64()), ("value", pa.string())])
    row = pa.struct(list(schema))
    # what pa.array gives for rows over 2 GB of text (32-bit offsets), made small here
    chunked = pa.chunked_array([pa.array([(0, "a"), (1, None)], type=row), pa.array([(2, "c")], type=row)])
    table = parquet.struct_table(chunked, schema)
    assert table.schema == schema and table.column("index").num_chunks == 2
    assert table.to_pylist() == [{"index": 0, "value": "a"}, {"index": 1, "value": None}, {"index": 2, "value": "c"}]
    assert parquet.struct_table(pa.array([(3, "d")], type=row), schema).to_pylist() == [{"index": 3, "value": "d"}]


def _jsonl(tmp_path: Path, ops: list[dict], bad: dict[int, str]) -> Path:
    """`ops` as JSON lines, line N (1-based) replaced by bad[N]."""
    lines = [json.dumps(op) for op in ops]
    for n, text in bad.items():
        lines[n - 1] = text
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_each_row_group_holds_one_kind_of_row_so_a_scan_by_kind_skips_the_others(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(parquet, "ROWS", 500)
    ops = synthetic.generate(seed=1, events=2000, plant=["key-order"]).ops
    path = History(ops).to_parquet(tmp_path / "h.parquet")
    file = pq.ParquetFile(path)

    def kind(row: dict) -> str:
        if row["pos"] is not None:
            return "records"
        if row["f"] == "send":
            return "invokes" if row["type"] == "invoke" else "completions"
        return "polls" if row["f"] == "poll" else "other ops"

    kinds = [{kind(r) for r in file.read_row_group(i, columns=["f", "type", "pos"]).to_pylist()}
             for i in range(file.num_row_groups)]
    assert all(len(k) == 1 for k in kinds)
    assert {k for (k,) in kinds} == set(parquet.GROUPS)
    # the statistics a filtered scan skips by: a records group's pos has no null, an op group's only nulls
    for i in range(file.num_row_groups):
        stats = file.metadata.row_group(i).column(file.schema_arrow.get_field_index("pos")).statistics
        assert (stats.null_count == 0) == (kinds[i] == {"records"})
    # the ops come back in index order all the same
    assert History.from_path(path).ops == ops


@pytest.mark.parametrize("workers", [1, 2])
def test_converting_a_jsonl_history_streams_it_in_chunks_and_reports_bad_lines_where_they_are(
        tmp_path: Path, monkeypatch, workers):
    monkeypatch.setattr(parquet, "CHUNK_BYTES", 20_000)  # many chunks: line numbers carry across them
    monkeypatch.setattr(parquet, "ROWS", 300)
    ops = synthetic.generate(seed=2, events=3000, plant=["duplicate"]).ops
    path = _jsonl(tmp_path, ops, {1500: '{"index": 5, "type": "ok"', 2900: '{"type": "done", "f": "send", "process": 1}'})
    out, problems = parquet.convert_jsonl(path, tmp_path / "h.parquet", workers=workers)
    assert [p.split(":")[0] for p in problems] == ["line 1500", "line 2900"]
    assert "type must be one of" in problems[1]
    kept = [op for n, op in enumerate(ops, 1) if n not in (1500, 2900)]
    assert History.from_path(out).ops == kept == History.from_path(path).ops
    assert History.from_path(path).problems == problems


def test_an_op_without_an_index_gets_its_line_place_in_both_readers(tmp_path: Path):
    ops = [{"type": "invoke", "f": "send", "process": 1, "value": 1}, {"type": "ok", "f": "send", "process": 1, "value": 1}]
    path = _jsonl(tmp_path, [{}, *ops], {1: "not json"})
    out, _ = parquet.convert_jsonl(path, tmp_path / "h.parquet")
    assert [op["index"] for op in History.from_path(out).ops] == [1, 2] == \
        [op["index"] for op in History.from_path(path).ops]
