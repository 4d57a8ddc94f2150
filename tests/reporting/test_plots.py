"""Plots: PNG files for latency, throughput and each key-order witness; fault windows paired."""
from __future__ import annotations

from pathlib import Path

from chaoskit.run.checks import run_checks
from chaoskit.history import synthetic
from chaoskit.reporting.plots import fault_windows, latencies, plot_verdict

PNG = b"\x89PNG\r\n\x1a\n"


def test_plots_written_with_a_key_order_timeline_only_when_witnessed(tmp_path: Path):
    s = synthetic.generate(seed=3, events=3000, plant=["key-order"])
    paths = plot_verdict(run_checks(s.ops, engine="local"), s.ops, tmp_path / "a")
    assert [p.name for p in paths] == ["latency.png", "throughput.png", "key-order-0.png"]
    assert all(p.read_bytes()[:8] == PNG and p.stat().st_size > 5000 for p in paths)
    clean = synthetic.generate(seed=3, events=3000)
    names = [p.name for p in plot_verdict(run_checks(clean.ops, engine="local"), clean.ops, tmp_path / "b")]
    assert names == ["latency.png", "throughput.png"]


def test_latency_pairs_invoke_with_completion_and_windows_pair_start_with_stop():
    ops = [{"process": 0, "type": "invoke", "f": "send", "time_ns": 1_000_000_000},
           {"process": "nemesis", "type": "info", "f": "start", "time_ns": 1_500_000_000,
            "value": {"fault": "kill", "window": 1, "target": "random-broker", "resolved": "broker-3"}},
           {"process": 0, "type": "ok", "f": "send", "time_ns": 3_000_000_000},
           {"process": "nemesis", "type": "info", "f": "stop", "time_ns": 4_000_000_000,
            "value": {"fault": "kill", "window": 1}},
           {"process": "nemesis", "type": "info", "f": "start", "time_ns": 5_000_000_000,
            "value": {"fault": "admin", "window": 2, "target": "client",
                      "params": {"op": "expand", "topic": "orders", "to": 6}}},
           {"process": 1, "type": "ok", "f": "poll", "time_ns": 6_000_000_000}]
    assert latencies(ops) == [(1.0, 2.0, "ok", "send")]
    assert fault_windows(ops) == [(1.5, 4.0, "kill broker-3"), (5.0, 6.0, "expand orders to 6")]
