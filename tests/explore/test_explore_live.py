"""chaoskit explore on real clusters: the command finds a mutation's anomaly, shrinks it, writes the
finding's folder and prints its replay, which fails the same way on a fresh cluster; and a cluster
kept between runs gives every schedule the verdict a fresh cluster gives, both ways."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from chaoskit.cluster.reaper import run_processes
from chaoskit.explore.lanes import Lane
from chaoskit.explore.steps import Step, StepSchedule, default_base, to_test
from chaoskit.run.chaostest import ChaosTest
from chaoskit.run.runner import run

CLI = [sys.executable, "-c", "import sys; from chaoskit.cli import main; sys.exit(main())"]
EXPAND = Step("admin", 2.0, 0.5, "client", {"op": "expand", "topic": "orders", "to": 6}, pick=1)
# the cheapest element to lose: with the producer placing keys by murmur2 modulo the count (no linear
# hashing), any expansion moves keys while their older records wait unread: key-order
MUTATED = replace(default_base(duration_s=7.0), mutations=["linear-hashing"], drain_timeout_s=15.0)
ROUGH = StepSchedule((Step("kill", 1.0, 1.5, "random-broker", pick=1), Step("partition", 2.0, 3.0, "coordinator", pick=2)))


def test_explore_finds_shrinks_and_writes_a_finding_that_replays_on_a_fresh_cluster(tmp_path):
    base = tmp_path / "base.json"
    schedule = StepSchedule((EXPAND, Step("latency", 1.0, 2.0, "client", {"latency": 50}, pick=2)))
    base.write_text(json.dumps(to_test(replace(MUTATED, reports=tmp_path / "reports"), schedule, "smoke", 3)
                               .to_json()))
    out = tmp_path / "explore"
    done = subprocess.run(CLI + ["explore", str(base), "--seed", "5", "--budget", "90s", "--shrink-budget", "20s",
                                 "--jobs", "1", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # a finding
    assert "FINDING key-order in run 0" in done.stdout and "replay: chaoskit run" in done.stdout
    [folder] = (out / "findings").iterdir()
    assert folder.name.startswith("key-order-")
    replayed = ChaosTest.from_json(json.loads((folder / "test.json").read_text()))
    steps = replayed.faults["scripted"]
    assert [s["fault"] for s in steps] == ["admin"], steps  # shrunk: the latency is not needed, the expansion is
    assert (folder / "schedule.txt").read_text().count(" s  ") == len(steps)
    replays = (folder / "replay.txt").read_text()
    assert f"chaoskit run {folder / 'test.json'}" in replays and "of 3 replays" in replays
    verdict = json.loads((folder / "verdict.json").read_text())
    assert verdict["witnesses"]["valid"] is False and (folder / "run" / "history.jsonl").exists()
    lines = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert lines[0]["findings"] == ["key-order"] and lines[0]["parent"] == "base"
    assert not list((out / "lanes").glob("*/broker-1")), "the lanes' cluster data is removed at the end"
    assert not run_processes(lines[0]["run_dir"].split("/")[-1])

    fresh = subprocess.run(CLI + ["run", str(folder / "test.json"), "--reports", str(tmp_path / "fresh"), "--json"],
                           capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 1 and "key-order" in [n for n, r in json.loads(fresh.stdout)["verdict"]["results"]
                                                     .items() if r["valid"] is False], fresh.stderr[-2000:]


def test_a_kept_cluster_gives_each_schedule_the_verdict_a_fresh_one_gives(tmp_path):
    base = replace(MUTATED, reports=tmp_path, duration_s=6.0)
    failing = to_test(base, StepSchedule((EXPAND,)), "fails", 11)
    # a kill and a partition first leave the kept cluster to be restored before the others run on it
    rough = to_test(base, ROUGH, "rough", 12)
    clean = to_test(base, StepSchedule(()), "clean", 13)
    lane = Lane(tmp_path / "lanes")
    try:
        # on the kept cluster each run has topics of its own, as an explore's runs do
        kept = {t.name: run(to_test(base, schedule, f"{t.name}-kept", t.seed, suffix=f"-{t.name}"), lane=lane)
                for t, schedule in ((rough, ROUGH), (failing, StepSchedule((EXPAND,))), (clean, StepSchedule(())))}
        assert lane.started == 1 and lane.runs == 3, "one cluster served the three runs"
        assert (kept["fails"].run_dir / "broker-1.log").exists(), "each run gets its slice of the node logs"
        requests = (kept["fails"].run_dir / "broker-1" / "requests.log").read_text()
        assert "orders-fails" in requests and "orders-rough" not in requests  # and of what clients sent
    finally:
        lane.close()
    fresh = {t.name: run(t) for t in (failing, clean)}
    for name in ("fails", "clean"):
        assert kept[name].error is None and fresh[name].error is None
        assert kept[name].anomalies == fresh[name].anomalies, name
        assert kept[name].valid == fresh[name].valid, name
    assert fresh["fails"].anomalies >= {"key-order"} and fresh["clean"].valid is True
    assert Path(lane.root).exists() and not list(Path(lane.root).glob("*/broker-1"))


@pytest.mark.nightly  # CI time: the search and its shrink are shown by the first test
def test_a_killed_explore_loses_no_finding_and_resumes_where_it_stopped(tmp_path):
    import os
    import signal
    import time

    base = tmp_path / "base.json"
    base.write_text(json.dumps(to_test(replace(MUTATED, reports=tmp_path / "reports"), StepSchedule((EXPAND,)), "kill",
                                       3).to_json()))
    out = tmp_path / "explore"
    proc = subprocess.Popen(CLI + ["explore", str(base), "--seed", "6", "--budget", "10m", "--until", "budget",
                                   "--no-shrink", "--jobs", "1", "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not list(out.glob("findings/key-order-*/run/history.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.5)  # the explore's own progress, polled: nothing to wait on but its folder
        assert list(out.glob("findings/key-order-*")), "no finding within 180 s"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the explore and its lanes' workers, at once
        proc.wait(30)
    [folder] = out.glob("findings/key-order-*")
    assert {"test.json", "schedule.txt", "verdict.json", "replay.txt"} <= {p.name for p in folder.iterdir()}
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines() if x.strip()]
    resumed = subprocess.run(CLI + ["explore", "--resume", str(out), "--budget", "1s", "--jobs", "1"],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr  # the old finding is known; nothing new was found
    after = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines() if x.strip()]
    assert [x["n"] for x in after[len(runs):]] == list(range(len(runs), len(after))) and len(after) > len(runs)


# KAFKA-20029 in one explore step: the batch grows __consumer_offsets, a broker restarts (and reads
# the new count) and every broker is asked where eight groups live
GUARDRAIL_STEP = Step("expand-batch", 1.0, 1.0, "client",
                      {"topics": {"orders": 5, "__consumer_offsets": 6}, "restart": True, "probe_s": 3}, pick=1)


@pytest.mark.parametrize("mutations", [
    ["guardrail"],
    pytest.param([], marks=pytest.mark.nightly),  # CI: the guardrail suite's patched run refuses the same batch
])
def test_the_expand_batch_step_shows_a_split_only_when_the_guardrail_is_off(tmp_path, mutations):
    test = to_test(replace(default_base(duration_s=6.0), mutations=mutations, reports=tmp_path),
                   StepSchedule((GUARDRAIL_STEP,)), "guardrail", 7)
    result = run(test)
    assert result.error is None, result.error
    split = result.verdict.results["coordinator-split"]
    assert split.counts["answers"] >= 2 * 8 * 3, split  # asked before the batch and at least once after
    assert split.valid is (not mutations), split


STALE_SHRINK_STEP = Step("stale-shrink", 1.0, 4.0, "client", {"topic": "orders", "grow": 2, "delay_ms": 2000}, pick=1)


@pytest.mark.parametrize("mutations", [
    ["readonly-refusal"],
    pytest.param([], marks=pytest.mark.nightly),  # CI: the reduction suite's patched run judges the same claim
])
def test_the_stale_shrink_step_writes_to_a_readonly_partition_only_when_the_refusal_is_off(tmp_path, mutations):
    schedule = StepSchedule((STALE_SHRINK_STEP,), {"enable.ordered.delivery": "false"})
    test = to_test(replace(default_base(duration_s=8.0), mutations=mutations, reports=tmp_path), schedule,
                   "readonly", 11)
    result = run(test)
    assert result.error is None, result.error
    readonly = result.verdict.results["write-to-readonly"]
    assert readonly.valid is (not mutations), readonly
    if not mutations:
        assert readonly.counts["displaced_sends"] >= 1, readonly  # the refusal was exercised, not avoided
