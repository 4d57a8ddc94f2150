"""`chaoskit schedule`: the same spec and seed print the same bytes; bad specs are usage errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chaoskit.nemesis.schedule import SCHEDULE_FILE, Schedule

SPEC = {"duration_s": 30, "mean_interval_s": 3, "window_s": [1, 4],
        "faults": {"zombie": {"weight": 1, "targets": ["random-broker"]},
                   "latency": {"weight": 2, "targets": ["client"], "params": {"latency": {"uniform": [10, 90]}}}}}


def schedule(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("chaoskit")
    return subprocess.run([str(exe), "schedule", *args], capture_output=True, text=True, timeout=60)


def test_same_seed_same_bytes_and_out_writes_the_run_file(tmp_path: Path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    first, again, other = (schedule(str(spec), "--seed", s) for s in ("7", "7", "8"))
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout != other.stdout
    parsed = Schedule.from_json(first.stdout)
    assert parsed.seed == 7 and parsed.windows and {w.name for w in parsed.windows} <= {"zombie", "latency"}
    written = schedule(str(spec), "--seed", "7", "--out", str(tmp_path / "run"))
    assert (tmp_path / "run" / SCHEDULE_FILE).read_text() == first.stdout == written.stdout


def test_unknown_faults_and_bad_specs_are_usage_errors(tmp_path: Path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**SPEC, "faults": {"meteor": {"weight": 1, "targets": ["client"]}}}))
    out = schedule(str(spec), "--seed", "1")
    assert out.returncode == 3 and "meteor" in out.stderr and "zombie" in out.stderr
    spec.write_text("{not json")
    out = schedule(str(spec), "--seed", "1")
    assert out.returncode == 3 and "is not JSON" in out.stderr
    out = schedule(str(tmp_path / "missing.json"), "--seed", "1")
    assert out.returncode == 3 and "cannot read the spec" in out.stderr
