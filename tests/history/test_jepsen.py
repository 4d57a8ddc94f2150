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


def spaced_line(op: dict, gap: str = "  ") -> str:
    fields = [edn(op["process"]), edn(op["type"]), edn(op["f"]), edn(op["value"])]
    if "error" in op:
        fields.append(f'"{op["error"]}"')
    return "INFO  jepsen.util - " + gap.join(fields)


def test_runs_of_spaces_tabs_and_a_mix_give_the_same_ops(tmp_path: Path):
    layouts = {
        "tabs": [log_line(op) for op in NATIVE],
        "spaces": [spaced_line(op) for op in NATIVE],
        "mixed": [spaced_line(op, gap) for op, gap in zip(NATIVE, ["\t ", "   ", " \t", "\t\t", " ", "  "] * 2)],
    }
    loaded = {}
    for name, lines in layouts.items():
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(lines) + "\n")
        history = History.from_path(path)
        assert history.problems == [], name
        loaded[name] = core(history.ops)
    assert loaded["tabs"] == loaded["spaces"] == loaded["mixed"] == core(native(tmp_path).ops)


def test_a_value_with_spaces_inside_is_one_value(tmp_path: Path):
    path = tmp_path / "spaced.log"
    path.write_text('INFO  jepsen.util - 3  :ok  :cas  [1 4]\n'
                    'INFO  jepsen.util - 4   :ok   :write   {:a 1, :b [2 3]}   :timed-out\n'
                    'INFO  jepsen.util - 5 :ok :put "hello  world"\n'
                    'INFO  jepsen.util - 6\t:info\t:cas\t[1 4]\tindeterminate: read timed out\n'
                    'INFO  jepsen.util - 7 :invoke :read\n')
    history = History.from_path(path)
    assert history.problems == []
    got = [(op["process"], op["type"], op["f"], op["value"], op.get("error")) for op in history.ops]
    assert got == [(3, "ok", "cas", [1, 4], None), (4, "ok", "write", {"a": 1, "b": [2, 3]}, "timed-out"),
                   (5, "ok", "put", "hello  world", None),
                   (6, "info", "cas", [1, 4], "indeterminate: read timed out"),  # Jepsen `str`s its errors
                   (7, "invoke", "read", None, None)]


def test_broken_spaced_lines_are_problems_naming_their_line(tmp_path: Path):
    path = tmp_path / "broken.log"
    path.write_text("INFO  jepsen.core - Running test\n"
                    "INFO  jepsen.util - 3  :ok  :cas  [1 4]\n"
                    "INFO  jepsen.util - 3  :ok\n"  # no f
                    "INFO  jepsen.util - 3  :ok  :cas  [1 4\n"  # a value that never closes
                    "INFO  jepsen.util - 3  :ok  :cas  [1 4]:oops\n")  # an error glued to the value
    history = History.from_path(path)
    assert len(history.ops) == 1 and history.ops[0]["value"] == [1, 4]
    assert [p.split(":")[0] for p in history.problems] == ["line 3", "line 4", "line 5"]
    assert "tabs or spaces" in history.problems[0] and "truncated" in history.problems[1]
