"""Jepsen's history.edn and log text load as the same ops as our JSONL; broken lines are reported."""
from __future__ import annotations

from pathlib import Path

from chaoskit.history.reader import History

NATIVE = [
    {"process": 0, "type": "invoke", "f": "write", "value": 3},
    {"process": 1, "type": "invoke", "f": "read", "value": None},
    {"process": 0, "type": "ok", "f": "write", "value": 3},
    {"process": 1, "type": "ok", "f": "read", "value": 3},
    {"process": 2, "type": "invoke", "f": "cas", "value": [3, 4]},
    {"process": "nemesis", "type": "info", "f": "start", "value": None},
    {"process": 2, "type": "info", "f": "cas", "value": [3, 4], "error": "timeout"},
    {"process": 1, "type": "invoke", "f": "txn", "value": [["append", "x", 1], ["r", "y", None]]},
    {"process": 1, "type": "fail", "f": "txn", "value": [["append", "x", 1], ["r", "y", None]], "error": "aborted"},
]


def edn(v) -> str:
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + " ".join(edn(x) for x in v) + "]"
    if isinstance(v, str):  # the names Jepsen writes as keywords
        return ":" + v if v.isidentifier() else '"' + v + '"'
    return str(v)


def edn_line(op: dict) -> str:
    fields = [f":{k} {edn(op[k])}" for k in ("process", "type", "f", "value") if k in op]
    if "error" in op:
        fields.append(f':error "{op["error"]}"')
    return "{" + ", ".join(fields) + "}"


def log_line(op: dict) -> str:
    fields = [edn(op["process"]), edn(op["type"]), edn(op["f"]), edn(op["value"])]
    if "error" in op:
        fields.append(f'"{op["error"]}"')
    return "INFO  jepsen.util - " + "\t".join(fields)


def core(ops: list[dict]) -> list[dict]:
    return [{k: op.get(k) for k in ("index", "process", "type", "f", "value", "error")} for op in ops]


def native(tmp_path: Path) -> History:
    return History.from_path(History(NATIVE).to_jsonl(tmp_path / "h.jsonl"))


def test_edn_history_gives_the_native_ops(tmp_path: Path):
    path = tmp_path / "history.edn"
    path.write_text("\n".join(edn_line(op) for op in NATIVE) + "\n")
    loaded = History.from_path(path)
    assert loaded.problems == []
    assert core(loaded.ops) == core(native(tmp_path).ops)


def test_log_text_gives_the_native_ops_and_skips_other_loggers(tmp_path: Path):
    path = tmp_path / "jepsen.log"
    body = [log_line(op) for op in NATIVE]
    body.insert(2, "INFO  jepsen.core - Running test with seed 3")
    body.insert(0, "2024-01-01 10:00:00,000{GMT}\tINFO\t[main] jepsen.cli: Test starting")
    path.write_text("\n".join(body) + "\n")
    loaded = History.from_path(path)
    assert loaded.problems == []
    assert core(loaded.ops) == core(native(tmp_path).ops)


def test_newer_log_layout_is_read(tmp_path: Path):
    path = tmp_path / "x.txt"
    path.write_text("2024-01-01 10:00:00,446{GMT}\tINFO\t[jepsen worker 3] jepsen.util: 3\t:ok\t:cas\t[1 4]\n")
    [op] = History.from_path(path).ops
    assert (op["process"], op["type"], op["f"], op["value"]) == (3, "ok", "cas", [1, 4])


def test_a_broken_line_is_reported_by_number_and_the_rest_loads(tmp_path: Path):
    lines = [edn_line(op) for op in NATIVE]
    lines[3] = lines[3][:12]  # truncated
    lines[5] = "{:process 0, :type :bogus, :f :read}"
    path = tmp_path / "history.edn"
    path.write_text("\n".join(lines) + "\n")
    loaded = History.from_path(path)
    assert len(loaded.ops) == len(NATIVE) - 2
    assert [p.split(":")[0] for p in loaded.problems] == ["line 4", "line 6"]
    assert "truncated" in loaded.problems[0] and "type must be one of" in loaded.problems[1]

    log = tmp_path / "jepsen.log"
    log.write_text("INFO  jepsen.util - 0\t:ok\n" + log_line(NATIVE[0]) + "\n")
    loaded = History.from_path(log)
    assert len(loaded.ops) == 1 and loaded.problems[0].startswith("line 1:")
