"""Which broker a suite runs on, and what it is skipped for: capabilities checked against chaoskit's
own broker and tansu's declaration (a dry run: nothing starts, so tansu need not be built)."""
from __future__ import annotations

import json

import pytest

from chaoskit.cluster import capabilities as caps
from chaoskit.pluginmanager import broker_kind, broker_names
from chaoskit.run.chaostest import ChaosTest, on_its_broker

pytest_plugins = ["pytester"]

SUITE = '''
import pytest
from chaoskit.cluster import capabilities as caps

pytestmark = pytest.mark.chaos_needs(caps.KIP253)

@pytest.mark.chaos(duration=6)
def test_marked(chaos):
    chaos.run()
'''
GENERIC = '''
import pytest

@pytest.mark.chaos(duration=6)
def test_generic(chaos):
    chaos.run()
'''


@pytest.fixture
def built_tansu(tmp_path, monkeypatch):
    """A tansu home that says the pinned build is there (the dry run starts nothing)."""
    from chaoskit_plugins.brokers import tansu

    home = tmp_path / "tansu-home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "tansu").write_text("")
    (home / "features").write_text(tansu.FEATURES + "\n")
    monkeypatch.setenv("CHAOSKIT_TANSU_HOME", str(home))
    return home


def test_chaoskits_own_broker_has_every_capability_and_tansu_none_beyond_the_core():
    assert broker_names() == ["chaoskit", "tansu"]
    own, tansu = broker_kind(None), broker_kind("tansu")
    assert own.capabilities == caps.ALL - {caps.STORAGE} and own.lacking(caps.ALL - {caps.STORAGE}) is None
    assert own.lacking({caps.STORAGE}) == "chaoskit does not implement a storage service apart from its brokers"
    assert tansu.capabilities == frozenset()
    assert tansu.lacking({caps.KIP253}) == "tansu 0.6.0 does not implement KIP-253 partition marking"
    assert tansu.lacking({caps.STORAGE}, "postgres") is None
    assert tansu.lacking({caps.STORAGE}) == ("tansu 0.6.0 over sqlite does not implement a storage service apart "
                                             "from its brokers")
    assert tansu.lacking(set()) is None
    with pytest.raises(ValueError, match="no broker named 'kraft'; installed: chaoskit, tansu"):
        broker_kind("kraft")
    with pytest.raises(ValueError, match="unknown capability kip999"):
        tansu.lacking({"kip999"})


def test_a_test_on_tansu_gets_its_default_engine_and_one_broker_unless_on_postgres():
    test = on_its_broker(ChaosTest("t", broker="tansu"))
    assert (test.broker_storage, test.brokers) == ("sqlite", 1)
    assert on_its_broker(ChaosTest("t", broker="tansu", broker_storage="postgres")).brokers == 3
    assert on_its_broker(ChaosTest("t", broker="tansu", broker_storage="memory", brokers=3)).brokers == 1
    assert on_its_broker(ChaosTest("t")).broker_storage is None  # chaoskit keeps its own logs
    with pytest.raises(ValueError, match="runs on sqlite, postgres, memory, not 'kafka'"):
        on_its_broker(ChaosTest("t", broker="tansu", broker_storage="kafka"))
    with pytest.raises(ValueError, match="takes no storage engine"):
        on_its_broker(ChaosTest("t", broker_storage="sqlite"))


def test_a_suite_needing_kip253_is_skipped_on_tansu_with_the_reason_and_runs_on_chaoskit(pytester, built_tansu):
    pytester.makepyfile(test_marked=SUITE, test_generic=GENERIC)
    reports = pytester.path / "reports"
    result = pytester.runpytest("--chaos-dry-run", f"--chaos-reports={reports}", "--chaos-broker=tansu", "-rs")
    # marked: skipped for its need; generic: the three stock clients on the patched profile's place,
    # its unpatched side skipped for the reason; both dry-run skips
    result.stdout.fnmatch_lines(["*test_generic*tansu-kafka-python*", "*test_generic*tansu-librdkafka*",
                                 "*test_generic*tansu-aiokafka*",
                                 "*tansu 0.6.0 does not implement an unpatched profile*",
                                 "*tansu 0.6.0 does not implement KIP-253 partition marking*"])
    written = {p.parent.name: json.loads(p.read_text()) for p in (reports / "dry-run").glob("*/test.json")}
    assert sorted(t["client"] for t in written.values()) == ["aiokafka", "kafka-python", "librdkafka"]
    assert {(t["broker"], t["broker_storage"], t["brokers"], t["profile"]) for t in written.values()} == {
        ("tansu", "sqlite", 1, "patched")}
    assert all("--chaos-broker=tansu" in t["replay"] for t in written.values())
    result = pytester.runpytest("--chaos-dry-run", f"--chaos-reports={reports}-own", "--chaos-profile=patched", "-rs")
    written = [json.loads(p.read_text()) for p in (reports.parent / "reports-own" / "dry-run").glob("*/test.json")]
    assert sorted((t["name"], t["broker"]) for t in written) == [("generic", "chaoskit"), ("marked", "chaoskit")]


def test_tansu_not_built_skips_every_test_with_the_command_that_builds_it(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("CHAOSKIT_TANSU_HOME", str(tmp_path / "nothing-here"))
    pytester.makepyfile(test_generic=GENERIC)
    result = pytester.runpytest("--chaos-dry-run", "--chaos-broker=tansu", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*tansu 0.6.0 is not built on this machine: run `make tansu` once*"])


def test_mutations_need_chaoskits_own_broker(pytester, built_tansu):
    pytester.makepyfile(test_generic=GENERIC)
    result = pytester.runpytest("--chaos-dry-run", "--chaos-broker=tansu", "--chaos-mutation=guardrail", "-rs")
    result.stdout.fnmatch_lines(["*tansu 0.6.0 does not implement chaoskit's mutations of the proposals*"])


@pytest.mark.parametrize("args, line", [
    (["--chaos-broker=kraft"], "ERROR: --chaos-broker: no broker named 'kraft'; installed: chaoskit, tansu"),
    (["--chaos-broker=tansu", "--chaos-broker-storage=s3"], "ERROR: --chaos-broker-storage: tansu 0.6.0 runs on *"),
    (["--chaos-broker=tansu", "--chaos-brokers=0"], "ERROR: --chaos-brokers: a count of brokers (1 or more), not '0'"),
])
def test_a_bad_broker_option_stops_the_session_in_one_line(pytester, args, line):
    pytester.makepyfile(test_generic=GENERIC)
    result = pytester.runpytest(*args)
    result.stderr.fnmatch_lines([line])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def _cli(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "chaoskit.cli", *args], capture_output=True, text=True, timeout=60)


def test_a_run_a_broker_cannot_take_is_refused_in_one_line_before_anything_starts(tmp_path, built_tansu):
    test = ChaosTest("t", faults={"mean_interval_s": 5, "window_s": [1, 2], "faults": {},
                                  "scripted": [{"at_s": 1, "fault": "zombie-isr", "target": "leader-of:orders/0",
                                                "window_s": 2}]})
    path = tmp_path / "test.json"
    path.write_text(json.dumps(test.to_json()))
    cases = {("--broker", "tansu"): "fault zombie-isr: tansu 0.6.0 does not implement controllers apart from its "
                                    "brokers or a ZooKeeper view of its partitions",
             ("--broker", "tansu", "--broker-storage", "s3"): "tansu 0.6.0 runs on sqlite, postgres, memory, not 's3'",
             ("--broker", "kraft"): "no broker named 'kraft'; installed: chaoskit, tansu",
             ("--broker", "tansu", "--brokers", "0"): "--brokers is a count of brokers (1 or more), not 0"}
    for args, line in cases.items():
        done = _cli("run", str(path), *args)
        assert done.returncode == 3, (args, done.stderr)
        assert line in done.stderr and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
    done = _cli("matrix", "--broker", "tansu", "--broker-storage", "s3", "--suites", "durability")
    assert done.returncode == 3 and "not 's3'" in done.stderr


def test_tansu_on_the_docker_backend_is_skipped_saying_it_runs_on_the_local_one(pytester, built_tansu):
    pytester.makepyfile(test_generic=GENERIC)
    result = pytester.runpytest("--chaos-dry-run", "--chaos-broker=tansu", "--chaos-backend=docker", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*tansu 0.6.0 runs on the local backend, not docker*"])
