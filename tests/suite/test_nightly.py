"""`chaoskit nightly`: rounds with fresh seeds from the night's seed, one Allure results directory,
a summary rewritten after every round, and a round whose runner is killed mid-way does not lose
the rounds before it or stop the night."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chaoskit.run.options import duration_arg as duration

# a suite whose runner dies (SIGKILL, as an OOM kill would) on odd seeds and otherwise fails or passes
SUITE = '''
import os, signal
import pytest

def test_sometimes_crashes(pytestconfig):
    seed = int(pytestconfig.getoption("chaos_seed"))
    if seed % 3 == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    assert seed % 3 == 1, "anomaly key-order: planted failure\\nreplay: pytest x --chaos-seed=%d" % seed

@pytest.mark.chaos
def test_marked():
    pass
'''


def test_durations_read_like_people_write_them():
    assert [duration(t) for t in ("90", "90s", "5m", "1h", "1.5m", "1h30m", "2m30s")] == [90, 90, 300, 3600, 90, 5400,
                                                                                        150]
    import argparse
    with pytest.raises(argparse.ArgumentTypeError, match="like 90s, 10m, 1h or 1h30m"):
        duration("soon")


def test_every_command_takes_its_durations_alike():
    from chaoskit.cli import build_parser

    parser = build_parser()
    for argv in (["run", "t.json", "--duration", "2m"], ["mutate", "--duration", "2m"], ["explore", "--duration", "2m"],
                 ["nightly", "--run-duration", "2m"]):
        assert parser.parse_args(argv).__dict__[argv[-2].lstrip("-").replace("-", "_")] == 120, argv


def test_a_night_survives_a_killed_runner_and_keeps_every_rounds_results(tmp_path):
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "test_night.py").write_text(SUITE)
    out = subprocess.run([sys.executable, "-c", "import sys; from chaoskit.cli import main; sys.exit(main())",
                          "nightly", "--duration", "12s", "--suites-dir", str(suites), "--seed", "7",
                          "--reports", str(tmp_path / "reports"), "--marker", "not nothing", "--run-duration", "1"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    night = next((tmp_path / "reports" / "nightly").iterdir())
    summary = json.loads((night / "summary.json").read_text())
    rounds = summary["rounds"]
    assert len(rounds) >= 3, out.stdout + out.stderr
    seeds = [r["seed"] for r in rounds]
    assert len(set(seeds)) == len(seeds), "every round has a fresh seed"
    crashed = [r for r in rounds if r["exit"] not in (0, 1)]
    # seed 7's rounds: a failure, a crash, a failure, ...: the night went on after the crash
    assert crashed and rounds.index(crashed[0]) < len(rounds) - 1 and summary["crashed_rounds"] == len(crashed)
    failing = {f["seed"] for f in summary["failing"]}
    assert failing == {r["seed"] for r in rounds if r["seed"] % 3 == 2}
    assert all(f["replay"].startswith("pytest x --chaos-seed=") for f in summary["failing"])
    assert (night / "summary.md").read_text().startswith("# chaoskit nightly (seed 7)")
    assert any(night.joinpath("allure-results").glob("*-result.json"))
    assert out.returncode == (1 if failing else 0)
    # the same night seed gives the same round seeds
    import random
    rng = random.Random(7)
    assert seeds == [rng.randrange(2**31) for _ in seeds]
