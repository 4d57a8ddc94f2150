"""Run results for the report tests: real verdicts of real checks over synthetic histories with
planted anomalies, written where a run would write them (no cluster needed)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from chaoskit.run.checks import run_checks
from chaoskit.history.reader import History
from chaoskit.history import synthetic
from chaoskit.run.chaostest import ChaosTest, RunResult


@pytest.fixture
def make_result(tmp_path: Path) -> Callable[..., RunResult]:
    def make(profile: str, plant: tuple[str, ...] = (), seed: int = 3) -> RunResult:
        run_dir = tmp_path / "runs" / f"run-{profile}"
        run_dir.mkdir(parents=True)
        ops = list(synthetic.ops(seed=seed, events=2000, plant=list(plant)))
        with (run_dir / "history.jsonl").open("w") as f:
            for op in ops:
                f.write(json.dumps(op) + "\n")
        (run_dir / "broker-1.log").write_text("broker 1 started\n")
        verdict = run_checks(History(ops), ["key-order", "lost-write", "duplicate"], engine="local")
        test = ChaosTest("kip253-expansion", profile=profile, seed=seed, client="ordered" if profile == "patched"
                         else "kafka-python", reports=tmp_path)
        stats: dict[str, Any] = {"ops": len(ops), "acked": 100, "cluster_up_s": 2.5, "run_seconds": 30.1}
        return RunResult(test, f"run-{profile}", run_dir, verdict, None, stats)
    return make
