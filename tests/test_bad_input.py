"""Bad input never looks like a verdict: `chaoskit check`, `run`, `export` and `schedule` answer a
file they cannot use (missing, empty, binary, cut short, another format, a folder, the wrong JSON
shape) and an output they cannot write; `matrix`, `mutate` and `nightly` a suite or mutation that
does not exist; `admin` a topic or address no broker answers for; `cluster` and `images` an output
they cannot write, a proxy that does not answer or a run id that names no folder. Each answers with
one line on stderr, no traceback, and exit 3 (never 1, an anomaly, nor 2, unknown), before anything
starts. Hypothesis feeds them generated garbage in this process; nothing starts a cluster."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from chaoskit.run.options import BAD_INPUT

from chaoskit.cli import main
from chaoskit.history import synthetic
from chaoskit.history.reader import History

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
GARBAGE = st.binary(max_size=300) | st.text(max_size=300).map(str.encode) | JSON.map(lambda v: json.dumps(v).encode())
SUFFIXES = [".jsonl", ".parquet", ".edn", ".json"]
ONCE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def answered(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    """The one line `chaoskit argv` printed for bad input (it must exit BAD_INPUT, without a traceback)."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == BAD_INPUT, (argv, code, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def written(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


@ONCE
@given(content=GARBAGE, suffix=st.sampled_from(SUFFIXES))
def test_check_and_export_answer_garbage_histories_as_bad_input(tmp_path_factory, capsys, content, suffix):
    tmp = tmp_path_factory.mktemp("garbage")
    path = written(tmp, f"history{suffix}", content)
    answered(capsys, ["check", str(path), "--engine", "local"])
    answered(capsys, ["export", str(path), "--out", str(tmp / "out.edn")])


@ONCE
@given(content=GARBAGE)
def test_run_answers_garbage_tests_as_bad_input(tmp_path_factory, capsys, content):
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    assume(not (isinstance(value, dict) and "name" in value))  # a valid test would start a run
    answered(capsys, ["run", str(written(tmp_path_factory.mktemp("garbage"), "test.json", content))])


TOPICS = {"topics": [{"name": "orders", "partitions": 2}]}


def scripted(fault: str, target: str) -> dict:
    return {"mean_interval_s": 5, "window_s": [1, 2], "faults": {},
            "scripted": [{"at": 0.2, "fault": fault, "target": target, "window_s": 1}]}


@pytest.mark.parametrize("argv, says", [
    (["check", "{tmp}/none.jsonl"], "no history at"),
    (["check", "{tmp}"], "is a folder"),
    (["check", "{tmp}/empty.jsonl"], "it is empty"),
    (["check", "{tmp}/cut.parquet"], "is not a readable Parquet file"),
    (["check", "{tmp}/history.jsonl", "--format", "parquet"], "is not a readable Parquet file"),
    (["run", "{tmp}"], "is a folder without a test.json"),
    (["run", "{tmp}/history.jsonl"], "looks like a history"),
    (["run", "{tmp}/list.json"], "not a list"),
    (["run", "{tmp}/string.json"], "not a string"),
    (["run", "{tmp}/empty.json"], 'no "name"'),
    (["run", "{tmp}/typed.json"], "seed: expected int"),
    (["run", "{tmp}/no-topics.json"], '"topics" is empty; the keyed-sequences'),
    (["run", "{tmp}/client.json"], "no client named 'nope'; installed: "),
    (["run", "{tmp}/fault.json"], "no fault named 'nope'; installed: "),
    (["run", "{tmp}/target.json"], "unknown target kind 'clients'"),
    (["explore", "{tmp}/client.json", "--budget", "1s"], "no client named 'nope'; installed: "),
    (["explore", "{tmp}/list.json", "--budget", "1s"], "not a list"),
    (["export", "{tmp}/history.jsonl", "--out", "{tmp}/missing/h.edn"], "does not exist; create it"),
    (["export", "{tmp}/history.jsonl", "--out", "{tmp}"], "it is a folder"),
    (["export", "{tmp}/history.jsonl", "--to", "avro"], "invalid choice"),
    (["export", "{tmp}/history.dat"], "name one with --format (jsonl"),
])
def test_each_kind_of_bad_input_says_what_is_wrong(tmp_path, capsys, argv, says):
    good = History(synthetic.generate(seed=1, events=200).ops).to_jsonl(tmp_path / "history.jsonl")
    good.with_name("cut.parquet").write_bytes(History.from_path(good).to_parquet(tmp_path / "p.parquet")
                                              .read_bytes()[:300])
    for name, text in {"empty.jsonl": "", "list.json": "[1, 2]", "string.json": '"x"', "empty.json": "{}",
                       "typed.json": '{"name": "x", "seed": "7"}', "no-topics.json": '{"name": "x", "topics": []}',
                       "client.json": json.dumps({"name": "x", "client": "nope", **TOPICS}),
                       "fault.json": json.dumps({"name": "x", **TOPICS, "faults": scripted("nope", "client")}),
                       "target.json": json.dumps({"name": "x", **TOPICS, "faults": scripted("kill", "clients")})}.items():
        (tmp_path / name).write_text(text)
    argv = [a.format(tmp=tmp_path) for a in argv]
    (tmp_path / "history.dat").write_text(good.read_text())
    if argv[0] == "export" and "--to" in argv:  # argparse's own error: SystemExit with usage first
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == BAD_INPUT and says in capsys.readouterr().err
        return
    assert says in answered(capsys, argv)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "missing").exists()  # nothing started or written


@ONCE
@given(content=GARBAGE)
def test_schedule_answers_garbage_specs_as_bad_input(tmp_path_factory, capsys, content):
    spec = written(tmp_path_factory.mktemp("garbage"), "spec.json", content)
    answered(capsys, ["schedule", str(spec), "--seed", "1"])


NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=30)


@ONCE
@given(name=NAMES)
def test_suite_and_mutation_names_that_do_not_exist_are_bad_input(tmp_path_factory, capsys, monkeypatch, name):
    from chaoskit.protocol.mutations import MUTATIONS

    root = Path(__file__).resolve().parents[1]
    # Hypothesis also draws the string constants of the code under test: a real suite's name would run it
    real = set(MUTATIONS) | {p.stem.removeprefix("test_") for p in (root / "suites").glob("test_*.py")}
    assume(name.strip(" ,") and "\n" not in name and not {n.strip() for n in name.split(",")} & real)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))  # no suites/ here: nothing can start
    for argv in (["matrix", f"--suites={name}", "--suites-dir", str(root / "suites")],
                 ["mutate", f"--mutations={name}"],
                 ["nightly", f"--suites={name}", "--suites-dir", str(root / "suites"), "--duration", "1s"]):
        answered(capsys, argv)


def refused(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    """The error `chaoskit argv` printed, whether argparse refused it (SystemExit) or the command did."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == BAD_INPUT, (argv, code, err)
    assert "Traceback" not in err, err
    return err


@ONCE
@given(topic=NAMES, server=st.sampled_from(["127.0.0.1:1", "[::1]:1"]) | NAMES)
def test_admin_answers_garbage_and_no_broker_as_bad_input(capsys, topic, server):
    assume(not topic.startswith("-") and not server.startswith("-"))  # argparse would read an option
    for argv in (["admin", "describe", topic, "--bootstrap-server", server],
                 ["admin", "expand", topic, "--to", "3", "--bootstrap-server", server],
                 ["admin", "shrink", topic, "--to", "1", "--immediate", "--bootstrap-server", server]):
        refused(capsys, argv)


@ONCE
@given(run_id=NAMES)
def test_cluster_down_answers_any_run_id_in_one_line(capsys, run_id):
    assume(not run_id.startswith("-"))
    try:
        code = main(["cluster", "down", run_id])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    # a run id that could name a folder: nothing of it is running; anything else: bad input
    assert (code, out.strip()) == (0, f"run {run_id}: nothing running") if code == 0 else code == BAD_INPUT


@pytest.mark.parametrize("argv, says", [
    (["cluster", "up", "--json-file", "{tmp}"], "is a folder; name a file"),
    (["cluster", "up", "--out", "{tmp}/afile"], "is a file; name a folder"),
    (["cluster", "up", "--proxied", "--proxy-url", "http://127.0.0.1:1"], "cannot reach the fault proxy API"),
    (["cluster", "up", "--proxied", "--proxy-url", "no url"], "--proxy-url no url"),
    (["cluster", "up", "--proxy-url", "http://127.0.0.1:1"], "only used with proxied"),
    (["cluster", "up", "--zookeepers", "2"], "odd"),
    (["cluster", "up", "--brokers", "0"], "too small"),
    (["cluster", "down", "../x"], "is not a run id"),
    (["images", "build", "--log", "{tmp}"], "is a folder; name a file"),
])
def test_cluster_and_images_refuse_bad_input_before_starting_anything(tmp_path, capsys, argv, says):
    (tmp_path / "afile").write_text("")
    before = set(tmp_path.iterdir())
    assert says in refused(capsys, [a.format(tmp=tmp_path) for a in argv])
    assert set(tmp_path.iterdir()) == before  # no run folder, no log: nothing started
