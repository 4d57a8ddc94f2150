"""A run that never finished is not a finding: a runner killed with SIGKILL during its play leaves a
history whose `unseen` check is unknown (its drain never ran, so no acknowledged write was yet due
to be read), not an anomaly, while the rest of the history is still judged. The consumers idle for
the window the kill falls in, so acknowledged writes are waiting to be read when it comes."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chaoskit.run.checks import run_checks
from chaoskit.cluster.reaper import reap
from chaoskit.history.reader import History
from chaoskit.history.schema import DRAINED, PHASE
from chaoskit.run.chaostest import ChaosTest, Topic

SEED = 11
IDLE = {"mean_interval_s": 1, "window_s": [15, 15],
        "faults": {"clients": {"weight": 1, "targets": ["client"], "params": {"action": "idle"}}}}


def history_ops(path: Path) -> list[dict]:
    ops = []
    for line in path.read_text().splitlines() if path.exists() else ():
        try:
            ops.append(json.loads(line))
        except ValueError:
            pass  # the line being written
    return ops


def idling(op: dict) -> bool:
    return op.get("process") == "nemesis" and op.get("f") == "start" and "idle" in json.dumps(op.get("value"))


def killed_after(tmp_path: Path, ops_after_idle: int) -> Path:
    """Run a short test in a child `chaoskit run`, SIGKILL it once its history holds `ops_after_idle`
    ops past the consumers' going idle, take its cluster down; the run's folder."""
    test = ChaosTest("killed", seed=SEED, duration_s=20, topics=[Topic("orders", 3)], client="kafka-python",
                     engine="local", reports=tmp_path, faults=IDLE,
                     workload_options={"producers": 2, "consumers": 1, "keys": 10, "rate": 40})
    spec = tmp_path / "test.json"
    spec.write_text(json.dumps(test.to_json()))
    child = subprocess.Popen([sys.executable, "-c", "import sys; from chaoskit.cli import main; sys.exit(main())",
                              "run", str(spec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    run_dir = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            run_dir = next(iter(sorted((tmp_path / "runs").glob("*"))), None) if (tmp_path / "runs").exists() else None
            ops = history_ops(run_dir / "history.jsonl") if run_dir else []
            marks = [i for i, op in enumerate(ops) if idling(op)]
            if marks and len(ops) - marks[0] >= ops_after_idle:
                break
            time.sleep(0.2)  # polling the history file for the condition, not waiting out a time
        else:
            out = child.communicate(timeout=5) if child.poll() is not None else (b"", b"")
            pytest.fail(f"the run never got {ops_after_idle} ops past its consumers' idling: {out[1].decode()[-3000:]}")
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        if run_dir is not None:
            reap(run_dir.name)
    assert run_dir is not None
    return run_dir


def test_a_runner_killed_during_its_play_leaves_unseen_unknown_not_an_anomaly(tmp_path: Path):
    run_dir = killed_after(tmp_path, random.Random(SEED).randint(20, 200))
    history = History.from_path(run_dir / "history.jsonl")
    assert history.phases() and DRAINED not in history.phases()
    verdict = run_checks(history, engine="local")
    unseen = verdict.results["unseen"]
    assert unseen.valid == "unknown" and "ends before its drain finished" in unseen.error, unseen
    assert unseen.counts.get("acked", 0) > 0  # there were acknowledged writes the drain would have read
    assert verdict.valid == "unknown" and not [n for n, r in verdict.results.items() if r.valid is False]
    assert verdict.results["lost-write"].valid is True  # the rest of the history is still judged
    # the same history with the drain's end marked: what was not read is then unseen
    drained = History([*history.ops, {"process": "runner", "type": "info", "f": PHASE, "value": DRAINED}])
    assert run_checks(drained, engine="local", checks=["unseen"]).results["unseen"].valid is False


def test_phase_marks_read_alike_from_jsonl_and_parquet_and_a_foreign_history_has_none(tmp_path: Path):
    from chaoskit.history import synthetic

    ops = synthetic.generate(seed=3, events=300).ops
    mark = lambda name: {"process": "runner", "type": "info", "f": PHASE, "value": name}  # noqa: E731
    cut = History([mark("play"), *ops, mark("heal"), mark("drain")])
    back = History(None, source=cut.to_parquet(tmp_path / "h.parquet"))
    assert back.phases() == cut.phases() == ["play", "heal", "drain"]
    assert "last phase: drain" in back.unfinished() and History(ops).unfinished() is None
    assert History([*cut.ops, mark(DRAINED)]).unfinished() is None
