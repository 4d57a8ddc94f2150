"""The pytest plugin is found through its pytest11 entry point and shows its option group."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chaoskit.suite.plugin import OPTIONS

pytest_plugins = ["pytester"]


def test_pytest_help_shows_the_chaoskit_group():
    # a separate interpreter: the entry point, not this process's imports, must bring the plugin in
    out = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "chaoskit: chaos testing for Kafka ordering guarantees" in out.stdout
    for flag, *_ in OPTIONS:
        assert flag in out.stdout
    assert "--chaos-keep" in out.stdout


def test_markers_are_registered(pytester):
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.nightly
        @pytest.mark.docker
        @pytest.mark.chaos(duration=5)
        def test_x():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1)


def test_command_line_wins_over_ini(pytester):
    pytester.makeini("[pytest]\nchaos_seed = 11\nchaos_backend = docker\n")
    pytester.makepyfile(
        """
        from chaoskit.suite.plugin import chaos_option
        def test_x(pytestconfig):
            assert chaos_option(pytestconfig, "chaos_seed") == "42"
            assert chaos_option(pytestconfig, "chaos_backend") == "docker"
            assert chaos_option(pytestconfig, "chaos_profile") == "both"
        """
    )
    result = pytester.runpytest("--chaos-seed=42")
    result.assert_outcomes(passed=1)


def test_bad_choice_is_rejected(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("--chaos-backend=kubernetes")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*invalid choice*kubernetes*"])


PARTS = '''
import json
from chaoskit.nemesis.ops import fault_op
from chaoskit.nemesis.schedule import generate

def test_parts(chaos_cluster, chaos_run, fault_proxy, nemesis, history_recorder, chaos_clients):
    assert chaos_run.cluster is chaos_cluster
    assert {"kafka-python", "librdkafka", "ordered", "probe"} <= set(chaos_clients)
    assert "c-b1" in fault_proxy.proxies()
    spec = {"duration_s": 10, "mean_interval_s": 2, "window_s": [1, 2],
            "faults": {"partition": {"weight": 1, "targets": ["broker:2"]}}}
    window = generate(spec, 1).windows[0]
    cuts = nemesis("partition", record=history_recorder.record)
    started = cuts.invoke(chaos_run, fault_op("start", window))
    history_recorder.record(started)
    disabled = {name for name, p in fault_proxy.proxies().items() if not p.enabled}
    assert disabled and all("b2" in name for name in disabled), disabled
    history_recorder.record(cuts.invoke(chaos_run, fault_op("stop", window)))
    assert all(p.enabled for p in fault_proxy.proxies().values())
    history_recorder.close()
    ops = [json.loads(line) for line in history_recorder.path.read_text().splitlines()]
    assert [op["f"] for op in ops] == ["start", "stop"] and ops[0]["index"] == 0
'''


def test_the_part_fixtures_give_a_shared_proxied_cluster_its_proxies_a_nemesis_and_a_recorder(pytester):
    pytester.makepyfile(test_parts=PARTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-profile=patched", timeout=300)
    result.assert_outcomes(passed=1)


PINNED = '''
import pytest

@pytest.mark.chaos(seed=5, duration=6, faults={"mean_interval_s": 2, "window_s": [1, 2],
                                               "faults": {"latency": {"weight": 1, "targets": ["client"]}}})
def test_pinned(chaos):
    chaos.run()

@pytest.mark.chaos(duration=6)
def test_free(chaos):
    chaos.run()
'''


def dry_run(pytester, *args: str) -> dict[str, tuple[int, str]]:
    """{test name: (seed, fault schedule)} of each chaos test as a dry run writes it."""
    reports = pytester.path / f"reports-{len(list(pytester.path.glob('reports-*')))}"
    result = pytester.runpytest("--chaos-dry-run", "--chaos-profile=patched", f"--chaos-reports={reports}", *args)
    result.assert_outcomes(skipped=2)
    written = {}
    for path in (reports / "dry-run").glob("*/test.json"):
        schedule = path.with_name("nemesis-schedule.json")
        written[path.parent.name.split("_test_")[-1]] = (  # test_pinned.py_test_free_patched_ -> free_patched_
            json.loads(path.read_text())["seed"], schedule.read_text() if schedule.exists() else "")
    return written


def test_a_seed_in_the_marker_replays_that_seed_whatever_the_session_seed(pytester):
    """Hypothesis's @seed: the test is pinned in code; the session's seed (given or drawn) does not move it."""
    pytester.makepyfile(test_pinned=PINNED)
    drawn, given = dry_run(pytester), dry_run(pytester, "--chaos-seed=9")
    assert drawn["pinned_patched_"][0] == given["pinned_patched_"][0] == 5
    assert drawn["pinned_patched_"][1] == given["pinned_patched_"][1] != ""  # the same schedule, from seed 5
    assert given["free_patched_"][0] == 9  # no seed in the marker: the session's


CLIENTS = '''
import pytest

@pytest.mark.chaos(duration=6)
def test_any(chaos):
    chaos.run()

@pytest.mark.chaos(duration=6, clients=("probe",))
def test_own(chaos):
    chaos.run()
'''


def test_chaos_client_runs_each_test_with_each_client_and_a_markers_clients_are_its_only_ones(pytester):
    pytester.makepyfile(test_clients=CLIENTS)
    reports = pytester.path / "reports"
    result = pytester.runpytest("--chaos-dry-run", f"--chaos-reports={reports}", "--chaos-client=kafka-python,aiokafka",
                                "-rs")
    result.assert_outcomes(skipped=5)  # test_any: 2 profiles x 2 clients; test_own: probe only, not asked for
    result.stdout.fnmatch_lines(["*runs only with probe, not kafka-python, aiokafka*"])
    written = {p.parent.name: json.loads(p.read_text()) for p in (reports / "dry-run").glob("*/test.json")}
    assert {(t["profile"], t["client"]) for t in written.values()} == {
        (p, c) for p in ("patched", "unpatched") for c in ("kafka-python", "aiokafka")}
    aio = next(t for name, t in written.items() if name.endswith("unpatched-aiokafka_"))
    assert "--chaos-client=aiokafka" in aio["replay"] and "test_any[unpatched-aiokafka]" in aio["replay"]


def test_without_chaos_client_the_default_pairs_keep_their_ids(pytester):
    pytester.makepyfile(test_clients=CLIENTS)
    reports = pytester.path / "reports"
    result = pytester.runpytest("--chaos-dry-run", f"--chaos-reports={reports}", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_any[[]patched[]]", "*test_any[[]unpatched[]]", "*test_own[[]patched[]]"])
    result = pytester.runpytest("--chaos-dry-run", f"--chaos-reports={reports}")
    written = {p.parent.name: json.loads(p.read_text())["client"] for p in (reports / "dry-run").glob("*/test.json")}
    assert sorted(written.values()) == ["kafka-python", "ordered", "probe", "probe"]


def test_a_session_of_chaos_runs_ends_with_a_summary_page_linking_each_run(pytester):
    pytester.makepyfile(test_short='''
import pytest

@pytest.mark.chaos(duration=3, profiles=("patched",), workload_options={"rate": 10})
def test_short(chaos):
    chaos.expect(chaos.run())
''')
    reports = pytester.path / "reports"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--chaos-reports={reports}",
                                           "--chaos-client=kafka-python", timeout=300)
    result.assert_outcomes(passed=1)
    line = next(x for x in result.outlines if x.startswith("chaoskit: 1 chaos run(s), summary "))
    index = Path(line.rsplit(" ", 1)[-1])
    assert index.is_relative_to(reports / "suites")
    run_page = next((reports / "runs").glob("*/index.html"))
    assert f"href='{os.path.relpath(run_page, index.parent)}'" in index.read_text()
