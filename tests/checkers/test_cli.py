"""`chaoskit check`: exit code is the verdict, a table or JSON, clear errors (local engine: no JVM)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chaoskit.history.reader import History
from chaoskit.history import synthetic


def chaoskit(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("chaoskit")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def test_exit_codes_and_outputs(tmp_path: Path):
    clean = History(synthetic.generate(seed=1, events=1500).ops).to_jsonl(tmp_path / "clean.jsonl")
    bad = History(synthetic.generate(seed=1, events=1500, plant=["key-order"]).ops).to_jsonl(tmp_path / "bad.jsonl")
    out = chaoskit("check", str(clean), "--engine", "local")
    assert out.returncode == 0, out.stderr
    assert "key-order" in out.stdout and "verdict: clean: " in out.stdout
    # piped, not a terminal: every check's name whole on its line, never wrapped mid-word
    assert all(name in out.stdout for name in ("truncation-undetected", "inconsistent-offsets", "nonmonotonic-send"))
    out = chaoskit("check", str(bad), "--engine", "local", "--json")
    assert out.returncode == 1, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["valid"] is False and verdict["results"]["key-order"]["valid"] is False
    out = chaoskit("check", str(bad), "--engine", "local", "--checks", "lost-write,unseen")
    assert out.returncode == 0 and "key-order" not in out.stdout


def test_unreadable_and_unknown(tmp_path: Path):
    out = chaoskit("check", str(tmp_path / "none.jsonl"), "--engine", "local")
    assert out.returncode == 3 and "no history at" in out.stderr
    out = chaoskit("check", str(tmp_path / "none.jsonl"), "--checks", "nope")
    assert out.returncode == 3 and "no check named 'nope'" in out.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n")
    out = chaoskit("check", str(empty), "--engine", "local")
    assert out.returncode == 3 and "no line could be read" in out.stderr and "line 1" in out.stderr


REGISTER = [(0, "invoke", "write", 1), (0, "ok", "write", 1), (1, "invoke", "cas", [1, 2]), (1, "ok", "cas", [1, 2]),
            (2, "invoke", "read", None), (2, "ok", "read", 2)]


def register_files(tmp_path: Path, last_read: int) -> list[Path]:
    """One register history written natively, as Jepsen EDN and as Jepsen log text."""
    rows = REGISTER[:-1] + [(2, "ok", "read", last_read)]

    def edn(v):
        return "nil" if v is None else (f"[{v[0]} {v[1]}]" if isinstance(v, list) else str(v))
    native = History([{"process": p, "type": t, "f": f, "value": v} for p, t, f, v in rows]).to_jsonl(
        tmp_path / f"r{last_read}.jsonl")
    e = tmp_path / f"r{last_read}.edn"
    e.write_text("".join(f"{{:process {p}, :type :{t}, :f :{f}, :value {edn(v)}}}\n" for p, t, f, v in rows))
    log = tmp_path / f"r{last_read}.log"
    log.write_text("".join(f"INFO  jepsen.util - {p}\t:{t}\t:{f}\t{edn(v)}\n" for p, t, f, v in rows))
    return [native, e, log]


def test_jepsen_histories_get_the_native_verdict_under_the_register_model(tmp_path: Path):
    for last_read, code in ((2, 0), (1, 1)):  # reading 1 after the cas to 2 completed is not linearizable
        codes = [chaoskit("check", str(p), "--model", "cas-register", "--engine", "local", "--json").returncode
                 for p in register_files(tmp_path, last_read)]
        assert codes == [code] * 3, (last_read, codes)


# concurrent appends of "x" and "y" to one key, then a get: under kv the get sees a string, under
# list-append a list; `seen` picks what it saw
APPENDS = [(0, "invoke", "append", "x"), (1, "invoke", "append", "y"), (0, "ok", "append", "x"),
           (1, "ok", "append", "y"), (2, "invoke", "get", None)]


def kv_files(tmp_path: Path, seen, name: str) -> list[Path]:
    """The history as JSONL, as a Porcupine-shaped EDN file (`:key`) and as Jepsen log text with
    independent [k v] tuples, fields separated by runs of spaces."""
    rows = APPENDS + [(2, "ok", "get", seen)]

    def edn(v):
        if isinstance(v, list):
            return "[" + " ".join(edn(x) for x in v) + "]"
        return "nil" if v is None else f'"{v}"'
    jsonl = History([{"process": p, "type": t, "f": f, "value": v, "key": "k"} for p, t, f, v in rows]).to_jsonl(
        tmp_path / f"{name}.jsonl")
    e = tmp_path / f"{name}.edn"
    e.write_text("".join(f'{{:process {p}, :type :{t}, :f :{f}, :key "k", :value {edn(v)}}}\n'
                         for p, t, f, v in rows))
    log = tmp_path / f"{name}.log"
    jepsen_f = {"get": "read", "put": "write", "append": "append"}
    log.write_text("".join(f'INFO  jepsen.util - {p}   :{t}   :{jepsen_f[f]}   ["k" {edn(v)}]\n'
                           for p, t, f, v in rows))
    return [jsonl, e, log]


def codes(model: str, paths: list[Path]) -> list[int]:
    return [chaoskit("check", str(p), "--model", model, "--engine", "local", "--json").returncode for p in paths]


def test_kv_and_list_append_through_the_cli(tmp_path: Path):
    assert codes("kv", kv_files(tmp_path, "yx", "kv-ok")) == [0, 0, 0]
    assert codes("kv", kv_files(tmp_path, "y", "kv-lost")) == [1, 1, 1]  # x was acknowledged before the get
    assert codes("list-append", kv_files(tmp_path, ["y", "x"], "list-ok")) == [0, 0, 0]
    assert codes("list-append", kv_files(tmp_path, ["y"], "list-lost")) == [1, 1, 1]
    out = chaoskit("check", str(tmp_path / "kv-ok.log"), "--model", "kv", "--engine", "local", "--json")
    result = json.loads(out.stdout)["results"]["linearizable"]
    assert result["details"]["model"] == "kv" and result["counts"]["ops"] == 3


def test_a_string_history_is_not_a_list_history(tmp_path: Path):
    # the issue: read as lists, concatenated strings could never be seen; read as kv they are
    files = kv_files(tmp_path, "xy", "strings")
    out = chaoskit("check", str(files[0]), "--model", "list-append", "--engine", "local")
    assert out.returncode == 1 and "verdict: anomaly: " in out.stdout
    assert codes("kv", files[:1]) == [0]


def test_exit_0_needs_every_line_read_and_every_asked_check_to_have_judged(tmp_path: Path):
    ops = synthetic.generate(seed=2, events=1500).ops
    clean = History(ops).to_jsonl(tmp_path / "clean.jsonl")
    out = chaoskit("check", str(clean), "--engine", "local")
    assert out.returncode == 0 and "not exercised" in out.stdout  # truncation-undetected: no truncation here
    out = chaoskit("check", str(clean), "--engine", "local", "--checks", "truncation-undetected,lost-write")
    assert out.returncode == 2 and "nothing to judge" in out.stdout
    partly = tmp_path / "partly.jsonl"
    partly.write_text(clean.read_text() + '{"process": 0, "type": "ok", "f": "send", "value": [0, "k\n')
    out = chaoskit("check", str(partly), "--engine", "local")
    assert out.returncode == 2 and "could not be read" in out.stdout


def test_several_histories_in_one_call_exit_with_the_worst(tmp_path: Path):
    clean = History(synthetic.generate(seed=1, events=600).ops).to_jsonl(tmp_path / "clean.jsonl")
    bad = History(synthetic.generate(seed=1, events=600, plant=["duplicate"]).ops).to_jsonl(tmp_path / "bad.jsonl")
    (tmp_path / "cut.jsonl").write_text(clean.read_text() + '{"f": "send", "ty\n')  # a torn last line
    out = chaoskit("check", str(clean), str(tmp_path / "cut.jsonl"), "--json")
    assert out.returncode == 2, out.stderr  # clean and unknown: unknown
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(Path(v["path"]).name, v["valid"], v["engine"]) for v in lines] == [
        ("clean.jsonl", True, "local"), ("cut.jsonl", "unknown", "local")]
    out = chaoskit("check", str(tmp_path / "cut.jsonl"), str(bad), str(clean))
    assert out.returncode == 1 and out.stdout.count("verdict: ") == 3  # an anomaly beats unknown


def test_check_leaves_superseded_records_of_compacted_topics_unjudged(tmp_path):
    """k0's first value is superseded by its second at a later offset; only the second is read."""
    import json as _json

    ops = [{"index": 0, "process": 0, "type": "invoke", "f": "send", "topic": "c", "key": "k0", "value": [0, "k0", 0]},
           {"index": 1, "process": 0, "type": "ok", "f": "send", "topic": "c", "key": "k0", "value": [0, "k0", 0],
            "partition": 0, "offset": 0},
           {"index": 2, "process": 0, "type": "invoke", "f": "send", "topic": "c", "key": "k0", "value": [0, "k0", 1]},
           {"index": 3, "process": 0, "type": "ok", "f": "send", "topic": "c", "key": "k0", "value": [0, "k0", 1],
            "partition": 0, "offset": 1},
           {"index": 4, "process": 1, "type": "invoke", "f": "poll", "topic": "c"},
           {"index": 5, "process": 1, "type": "ok", "f": "poll", "topic": "c", "value": [[0, 1, "k0", [0, "k0", 1], 0]]}]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(_json.dumps(op) + "\n" for op in ops))
    assert chaoskit("check", str(path), "--checks", "lost-write").returncode == 1
    assert chaoskit("check", str(path), "--checks", "lost-write", "--compacted-topics", "c").returncode == 0
