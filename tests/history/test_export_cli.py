"""`chaoskit export`: a run's history as Jepsen Kafka EDN that `chaoskit check` reads to the same verdict."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoskit.checkers.situate import unsituated
from chaoskit.cli import main
from chaoskit.history import synthetic
from chaoskit.history.reader import History


def run_dir(tmp_path: Path, plant: tuple[str, ...]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    History(synthetic.generate(seed=4, events=1200, plant=plant).ops).to_jsonl(run / "history.jsonl")
    return run


def check_json(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, dict]:
    """The verdict, its witnesses without their place among the run's faults (the export keeps none)."""
    code = main(["check", *args, "--engine", "local", "--json"])
    verdict = json.loads(capsys.readouterr().out)
    verdict["results"] = {n: unsituated(r) for n, r in verdict["results"].items()}
    return code, verdict


@pytest.mark.parametrize("plant", [(), ("lost-write", "poll-skip")], ids=["clean", "planted"])
def test_export_then_check_gives_the_runs_verdict(tmp_path: Path, capsys: pytest.CaptureFixture, plant):
    run = run_dir(tmp_path, plant)
    assert main(["export", str(run), "--to", "jepsen-kafka"]) == 0
    assert "wrote" in capsys.readouterr().out
    ours = check_json(capsys, str(run / "history.jsonl"))
    assert check_json(capsys, str(run / "history.edn")) == ours
    assert check_json(capsys, str(run / "history.edn"), "--format", "jepsen-kafka") == ours
    assert ours[0] == (0 if not plant else 1)


def test_out_and_unreadable_input(tmp_path: Path, capsys: pytest.CaptureFixture):
    run = run_dir(tmp_path, ())
    with open(run / "history.jsonl", "a") as f:
        f.write('{"truncated": \n')
    last = len((run / "history.jsonl").read_text().splitlines())
    out = tmp_path / "elsewhere.edn"
    assert main(["export", str(run / "history.jsonl"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"unreadable, not exported: line {last}: not JSON" in err and out.exists()
    assert main(["export", str(tmp_path / "nowhere")]) == 3
    assert "no history at" in capsys.readouterr().err
    assert main(["export", str(run), "--out", str(run / "history.jsonl")]) == 3
    assert "is the history itself" in capsys.readouterr().err
