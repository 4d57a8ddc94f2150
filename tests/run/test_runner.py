"""The ChaosTest runner end to end on a real proxied cluster: a control run checks clean and its
test.json replays the same schedule; --chaos-keep leaves a run that is not clean up, and
`chaoskit cluster down` takes it down; a run that cannot start says why and leaves nothing."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from chaoskit.cluster.reaper import run_processes
from chaoskit.nemesis.schedule import SCHEDULE_FILE
from chaoskit.reporting.summary import plot_run, write_summary
from chaoskit.run.chaostest import ChaosTest, Topic, schedule_for
from chaoskit.run.runner import run

LATENCY = {"mean_interval_s": 2, "window_s": [1, 2], "faults": {"latency": {"weight": 1, "targets": ["client"],
                                                                          "params": {"latency": 50}}}}


def small(tmp_path: Path, **fields) -> ChaosTest:
    return ChaosTest(**{"name": "control", "seed": 5, "duration_s": 6, "topics": [Topic("orders", 3)],
                        "client": "kafka-python", "engine": "local", "reports": tmp_path, "drain_timeout_s": 30,
                        "workload_options": {"producers": 2, "consumers": 1, "keys": 10, "rate": 20}, **fields})


def test_a_control_run_checks_clean_and_its_test_file_replays_its_schedule(tmp_path, render):
    result = run(small(tmp_path, faults=LATENCY))
    assert result.error is None and result.valid is True, json.dumps(result.to_json(), default=str)[:3000]
    ops = [json.loads(line) for line in result.history.read_text().splitlines()]
    acked = {json.dumps(op["value"]) for op in ops if op["f"] == "send" and op["type"] == "ok"}
    read = {json.dumps(r[3]) for op in ops if op["f"] == "poll" and op["type"] == "ok" for r in op["value"]}
    assert len(acked) == result.stats["acked"] > 50 and acked <= read and result.stats["drained"]
    assert any(op["process"] == "nemesis" and op["f"] == "start" for op in ops)
    assert {name for name, r in result.verdict.results.items() if r.valid is True} >= {"lost-write", "duplicate"}
    assert not run_processes(result.run_id), "the cluster is stopped after the run"
    assert (result.run_dir / "history.parquet").stat().st_size > 0  # what Spark read and reports attach

    assert result.replay == result.run_replay and result.replays == [result.replay]
    assert result.replay.endswith(f"chaoskit run {result.run_dir / 'test.json'}")  # .venv/bin/chaoskit, typed as is
    plots = plot_run(result)  # the plots and the timeline, then the run's own page with them
    page = render(result.run_dir / "index.html")
    assert re.search(r'<body[^>]*data-plots-loaded="all"', page), page[:2000]
    links = re.findall(r"<a href=\"([^\"#]+)\"", page)
    assert {"history.jsonl", "test.json", "results.json", "nemesis-schedule.json", "timeline.html"} <= set(links)
    assert any(link.endswith(".log") for link in links) and all((result.run_dir / x).exists() for x in links)
    timeline = render(result.run_dir / "timeline.html")
    assert re.search(r"class=\"fault\"[^>]*title=\"latency client", timeline), "the latency windows, by name"
    summary = render(write_summary([result], tmp_path / "summary", "one real run", {result.run_id: plots}))
    assert re.search(r'<body[^>]*data-plots-loaded="all"', summary) and "clean" in summary
    to_run = re.search(r"<a class=\"run-page\" href=\"([^\"]+)\"", summary).group(1)
    assert (tmp_path / "summary" / to_run).resolve() == (result.run_dir / "index.html").resolve()
    replayed = ChaosTest.from_json(json.loads((result.run_dir / "test.json").read_text()))
    assert schedule_for(replayed).to_json() == (result.run_dir / SCHEDULE_FILE).read_text()
    saved = json.loads((result.run_dir / "results.json").read_text())
    assert saved["valid"] is True and saved["seed"] == 5 and saved["replays"] == [result.replay]


def test_keep_leaves_a_run_that_is_not_clean_up_until_cluster_down(tmp_path):
    # a check whose ops the workload never records: its verdict is unknown, so the run is not clean
    result = run(small(tmp_path, checks=["coordinator-split"]), keep=True)
    try:
        assert result.valid == "unknown"
        kept = result.stats["kept"]
        assert kept["down"] == f"chaoskit cluster down {result.run_id}"
        assert len(run_processes(result.run_id)) >= 4  # ZooKeeper, controllers, brokers, proxy outlive the run
    finally:
        out = subprocess.run([sys.executable, "-c", "import sys; from chaoskit.cli import main; sys.exit(main())",
                              "cluster", "down", result.run_id], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "killed" in out.stdout, out.stderr
    assert not run_processes(result.run_id)


def test_a_run_that_cannot_start_says_why_and_leaves_nothing(tmp_path):
    result = run(small(tmp_path, client="no-such-client"))
    assert result.valid == "unknown" and "no client named 'no-such-client'" in result.error
    assert not run_processes(result.run_id)


def test_a_run_that_exercised_nothing_is_unknown_with_the_reason_never_clean(tmp_path):
    """Producers refused from the start (their topic was never created): nothing acknowledged or read."""
    result = run(small(tmp_path, topics=[], duration_s=4, drain_timeout_s=5, client_options={"send_timeout_s": 3}))
    assert result.error is None and result.stats["acked"] == 0 and result.stats["ops"] > 0
    assert result.valid == "unknown" and result.verdict.reason == "no check had anything to judge"
    assert "lost-write" in result.verdict.not_exercised


def test_a_check_asked_for_by_name_that_had_nothing_to_judge_is_unknown(tmp_path):
    """The truncation check on a run whose faults never truncate anything."""
    result = run(small(tmp_path, faults=LATENCY, checks=["truncation-undetected", "lost-write"]))
    check = result.verdict.results["truncation-undetected"]
    assert check.valid == "unknown" and not check.judged and result.valid == "unknown"
    assert "no consumer read a record that a truncation later replaced" in result.verdict.reason
    assert result.verdict.results["lost-write"].valid is True  # the rest was judged, and clean
