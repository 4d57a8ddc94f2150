"""`chaoskit cluster up` end to end: the JSON it prints describes a working cluster; SIGTERM stops
it cleanly; kill -9 of it leaves nothing of the run behind within 10 s (the reaper)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from chaoskit.cluster.reaper import run_processes
from chaoskit.cluster.waiting import wait_for

CHAOSKIT = str(Path(sys.executable).with_name("chaoskit"))


@contextmanager
def cluster_up(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], dict[str, Any]]]:
    json_file = tmp_path / "cluster.json"
    proc = subprocess.Popen([CHAOSKIT, "cluster", "up", "--run-dir", str(tmp_path / "run"),
                             "--json-file", str(json_file), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    described: dict[str, Any] = {}
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the one JSON line, printed once ready (EOF if it failed)
        assert line, f"chaoskit cluster up exited {proc.wait()}: {proc.stderr.read() if proc.stderr else ''}"
        described = json.loads(line)
        assert json.loads(json_file.read_text()) == described
        yield proc, described
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        if described:  # whatever happened, nothing of the run may stay
            for p in run_processes(described["run_id"]):
                p.kill()


def pids(described: dict[str, Any]) -> list[int]:
    return [n["pid"] for n in described["nodes"]] + [described["reaper_pid"]]


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_up_describes_a_working_cluster_and_sigterm_tears_it_down(tmp_path: Path):
    with cluster_up(tmp_path, "--brokers", "2", "--controllers", "2", "--profile", "unpatched") as (proc, d):
        roles = sorted((n["role"], n["id"]) for n in d["nodes"])
        assert roles == [("broker", 1), ("broker", 2), ("controller", 1), ("controller", 2), ("zookeeper", 1)]
        assert d["profile"] == "unpatched" and d["zookeeper"].startswith("127.0.0.1:")
        assert all(Path(n["log"]).exists() and not gone(n["pid"]) for n in d["nodes"])
        broker = json.loads(Path(next(n["config"] for n in d["nodes"] if n["role"] == "broker")).read_text())
        assert broker["leader.epoch.fencing.enable"] is False
        listed = subprocess.run(["kcat", "-L", "-b", d["bootstrap_servers"], "-m", "10"],
                                capture_output=True, text=True, timeout=30)
        assert listed.returncode == 0, listed.stderr
        assert "2 brokers:" in listed.stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert all(gone(p) for p in pids(d))
        assert run_processes(d["run_id"]) == []


def test_proxied_up_routes_every_path_through_a_named_proxy_and_kill_9_leaves_nothing(tmp_path: Path):
    with cluster_up(tmp_path, "--brokers", "2", "--proxied") as (proc, d):
        links = d["proxy"]["links"]
        assert sorted(links) == ["b1-b2", "b1-zk1", "b2-b1", "b2-zk1", "c-b1", "c-b2", "ctl1-b1", "ctl1-b2",
                                 "ctl1-zk1"]
        assert d["proxy"]["api"].startswith("http://127.0.0.1:")
        brokers = {n["id"]: n for n in d["nodes"] if n["role"] == "broker"}
        for i, b in brokers.items():  # clients are told the c-bN proxy, which forwards to the broker
            assert b["advertised"] == links[f"c-b{i}"]["listen"] and links[f"c-b{i}"]["upstream"] == b["address"]
        assert d["bootstrap_servers"] == ",".join(links[f"c-b{i}"]["listen"] for i in sorted(brokers))
        listed = subprocess.run(["kcat", "-L", "-b", d["bootstrap_servers"], "-m", "10"],
                                capture_output=True, text=True, timeout=30)
        assert listed.returncode == 0 and links["c-b1"]["listen"] in listed.stdout, listed.stderr
        assert len(run_processes(d["run_id"])) == 5  # proxy, zookeeper, controller, two brokers
        proc.kill()
        proc.wait()
        killed_at = time.monotonic()
        wait_for(lambda: not run_processes(d["run_id"]) and all(gone(p) for p in pids(d)), 10,
                 "the reaper removing the run's processes", Path(d["run_dir"]) / "reaper.log")
        assert time.monotonic() - killed_at < 10
