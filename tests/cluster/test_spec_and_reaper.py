"""ClusterSpec validation and config precedence, per-path routing in generated configs, and the
reaper killing a run's processes once the runner is gone."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.node import RUN_ID_ENV
from chaoskit.cluster.reaper import run_processes
from chaoskit.cluster.spec import ClusterSpec
from chaoskit.cluster.waiting import wait_for


@pytest.mark.parametrize("kwargs,message", [
    ({"profile": "half"}, "profile 'half' is not one of patched, unpatched"),
    ({"brokers": 0}, "brokers must be an integer >= 1"),
    ({"zookeepers": 2}, "zookeepers must be odd"),
    ({"host": "10.0.0.1"}, "only loopback"),
    ({"overrides": {"broker-9": {}}}, "overrides for unknown node(s) broker-9"),
])
def test_bad_specs_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError) as err:
        ClusterSpec(**kwargs)
    assert message in str(err.value)


def test_run_dir_defaults_under_reports_runs_and_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert ClusterSpec(run_id="abc").directory == tmp_path / "reports" / "runs" / "abc"
    # nodes run with their own working directories: a relative run_dir would move with them
    assert ClusterSpec(run_id="abc", run_dir=Path("elsewhere")).directory == tmp_path / "elsewhere"


class ProxyEverything:
    """A router that sends every path through a (pretend) proxy port: real port + 10000."""

    def address(self, source, target, real):
        return (real[0], real[1] + 10000 if real[1] < 55000 else real[1] - 10000)


def test_configs_follow_profile_overrides_and_routes(tmp_path: Path):
    spec = ClusterSpec(brokers=2, controllers=1, profile="unpatched", run_dir=tmp_path, router=ProxyEverything(),
                       broker_config={"min.insync.replicas": 2, "leader.epoch.fencing.enable": True},
                       overrides={"broker-2": {"min.insync.replicas": 1}})
    cluster = LocalCluster(spec)
    routed = ProxyEverything().address
    for node in cluster.zookeeper._make_nodes():
        cluster.zookeeper.nodes.append(node)
    b1, b2 = cluster.brokers[1], cluster.brokers[2]
    c1 = cluster._broker_config(b1)
    assert c1["ordered.delivery.enable"] is False  # the profile
    assert c1["leader.epoch.fencing.enable"] is True  # role-wide beats profile
    assert c1["min.insync.replicas"] == 2 and cluster._broker_config(b2)["min.insync.replicas"] == 1
    zk = cluster.zookeeper.nodes[0]
    assert c1["zookeeper.connect"] == "%s:%d" % routed("broker-1", "zookeeper-1", (zk.host, zk.ports.client))
    assert c1["peer.addresses"] == {"2": "%s:%d" % routed("broker-1", "broker-2", b2.address)}
    assert c1["advertised.listeners"] == "%s:%d" % routed("client", "broker-1", b1.address)
    assert c1["listeners"] == "%s:%d" % b1.address
    ctl = cluster._controller_config(cluster.controllers[1])
    assert ctl["controller.unstable.allow.internal.coordinator.partition.increase"] is True
    assert ctl["broker.addresses"] == {str(i): "%s:%d" % routed("controller-1", b.name, b.address)
                                       for i, b in cluster.brokers.items()}
    assert cluster.bootstrap_servers.split(",")[0] == c1["advertised.listeners"]


def test_reaper_kills_the_run_after_its_parent_dies(tmp_path: Path):
    run_id = f"reaper-test-{os.getpid()}"
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    env = {**os.environ, RUN_ID_ENV: run_id}
    # a stubborn node: ignores SIGTERM, and is paused (SIGSTOP) like a node under a pause fault
    node = subprocess.Popen([sys.executable, "-c",
                             "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
                            env=env)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # not of the run
    reaper = subprocess.Popen([sys.executable, "-m", "chaoskit.cluster.reaper", "--run-id", run_id,
                               "--parent-pid", str(parent.pid)], stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: [p.pid for p in run_processes(run_id)] == [node.pid], 10, "the node labelled")
        node.send_signal(19)  # SIGSTOP
        assert reaper.poll() is None, "the reaper must wait while the parent lives"
        parent.kill()
        parent.wait()
        assert reaper.wait(10) == 0
        assert node.wait(5) == -9
        assert other.poll() is None, "a process of no run must be left alone"
        assert "killed 1 process" in reaper.stderr.read()
    finally:
        for p in (parent, node, other, reaper):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert not psutil.pid_exists(node.pid) or psutil.Process(node.pid).status() == psutil.STATUS_ZOMBIE
