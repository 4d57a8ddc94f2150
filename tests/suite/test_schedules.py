"""The suites' schedules are a function of the seed: `pytest suites/ -m "chaos and not nightly"
--chaos-seed=7` twice gives the same schedule files, another seed different ones, and the replay
command a run records (in its test.json) gives its schedule again, as `chaoskit run` of that test.json
does. Dry runs: nothing is started."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def dry_run(reports: Path, *args: str) -> dict[str, bytes]:
    out = subprocess.run([sys.executable, "-m", "pytest", *args, "--chaos-dry-run", f"--chaos-reports={reports}",
                          "-p", "no:cacheprovider", "-q"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return {str(p.relative_to(reports)): p.read_bytes() for p in sorted((reports / "dry-run").rglob("*.json"))}


def test_the_same_seed_gives_the_same_schedules_and_another_seed_others(tmp_path):
    smoke = ["suites", "-m", "chaos and not nightly"]
    first = dry_run(tmp_path / "a", *smoke, "--chaos-seed=7")
    again = dry_run(tmp_path / "b", *smoke, "--chaos-seed=7")
    other = dry_run(tmp_path / "c", *smoke, "--chaos-seed=8")
    schedules = [name for name in first if name.endswith("nemesis-schedule.json")]
    assert len(schedules) >= 10, sorted(first)  # every smoke test, in each profile it runs
    assert {n: first[n] for n in schedules} == {n: again[n] for n in schedules}
    assert [first[n] for n in schedules] != [other[n] for n in schedules]


def test_a_recorded_replay_command_gives_the_same_schedule(tmp_path):
    recorded = dry_run(tmp_path / "a", "suites/test_kip253_expansion.py", "--chaos-seed=31", "--chaos-duration=40")
    name = next(n for n in recorded if n.endswith("test.json") and "unpatched" in n)
    replay = json.loads(recorded[name])["replay"]
    args = shlex.split(replay)
    assert args[0] == "pytest" and "--chaos-seed=31" in args and "--chaos-duration=40" in args
    replayed = dry_run(tmp_path / "b", *args[1:])
    schedule = name.replace("test.json", "nemesis-schedule.json")
    assert replayed[schedule] == recorded[schedule]
    # and `chaoskit run <that test.json>`, the other replay every failure prints, plays it byte for byte
    from chaoskit.run.chaostest import ChaosTest, schedule_for
    assert schedule_for(ChaosTest.from_json(json.loads(recorded[name]))).to_json().encode() == recorded[schedule]
