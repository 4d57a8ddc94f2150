"""One cell of a suite: its smoke test run in a child pytest for one profile, client, seed (and
mutation), and what its runs found. `chaoskit mutate` and `chaoskit matrix` are made of cells.

A cell's runs are read back from their results.json: each run's verdict, the anomalies it found,
the evidence counts of its checks and its replay command. The cell is *caught* when a run found
an anomaly, *clean* when every run checked clean, *unknown* otherwise (a run that broke, judged
nothing, or never wrote its results).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chaoskit.checkers.situate import witness_text

SUITES = Path("suites")
SMOKE = "chaos and not nightly and not docker"
WITH_NIGHTLY = "chaos and not docker"  # the suite's CI cases and its nightly ones


def pytest_broker_args(changes: dict[str, Any]) -> list[str]:
    """The pytest options that give a ChaosTest these broker fields (run.options.broker_changes)."""
    flags = {"broker": "--chaos-broker", "broker_storage": "--chaos-broker-storage", "brokers": "--chaos-brokers"}
    return [f"{flags[k]}={v}" for k, v in changes.items() if v is not None]


def run_cell(suite: str, where: Path, *, seed: int, profile: str = "patched", client: str | None = None,
             mutation: str | None = None, engine: str = "local", suites_dir: Path = SUITES,
             timeout_s: float = 900, marks: str = SMOKE, broker: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run suites/test_<suite>.py's smoke tests (or those `marks` selects) once; the cell as a dict
    (see the module's doc)."""
    where = where.resolve()
    where.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", str(suites_dir / f"test_{suite}.py"), "-m", marks, "-q", "-rs",
           f"--chaos-profile={profile}", f"--chaos-seed={seed}", f"--chaos-engine={engine}",
           f"--chaos-reports={where}", "-p", "no:cacheprovider", "-p", "no:allure_pytest"]  # the suites' own
    cmd += [f"--chaos-client={client}"] if client else []
    cmd += [f"--chaos-mutation={mutation}"] if mutation else []
    cmd += pytest_broker_args(broker or {})
    began = time.monotonic()
    with open(where / "pytest.log", "wb") as log:
        try:
            code: Any = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    runs = [run for path in sorted((where / "runs").glob("*/results.json")) if (run := _read(path)) is not None]
    return {"seed": seed, "outcome": outcome(runs), "exit": code, "seconds": round(time.monotonic() - began, 1),
            "runs": runs, "log": str(where / "pytest.log")}


def _read(path: Path) -> dict[str, Any] | None:
    try:
        r = json.loads(path.read_text())
    except ValueError:
        return None
    results = r["verdict"]["results"]
    return {"valid": r["valid"], "client": r.get("client"), "anomalies": sorted(n for n, c in results.items()
                                                                                if c["valid"] is False),
            "witnesses": [witness_text(w) for c in results.values() for w in c.get("witnesses", [])][:5],
            "evidence": {n: c.get("counts", {}) for n, c in results.items()},
            "reason": r["verdict"].get("reason"), "run_dir": str(path.parent), "replay": r["replay"],
            "duration_s": r.get("duration_s")}


def outcome(runs: list[dict[str, Any]]) -> str:
    if any(r["valid"] is False for r in runs):
        return "caught"
    if runs and all(r["valid"] is True for r in runs):
        return "clean"
    return "unknown"
