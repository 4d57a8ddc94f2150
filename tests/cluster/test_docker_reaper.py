"""The docker reaper: a runner killed with SIGKILL leaves no container or network of its run once
the reaper's grace period is over; a clean stop leaves nothing either. Real engine, real containers."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chaoskit.cluster.docker_engine import engine
from chaoskit.cluster.docker_reaper import GRACE_S, leftovers
from chaoskit.cluster.waiting import wait_for

pytestmark = pytest.mark.docker

RUNNER = textwrap.dedent("""
    import json, sys, threading
    from chaoskit.cluster.docker import DockerCluster
    from chaoskit.cluster.spec import ClusterSpec
    cluster = DockerCluster(ClusterSpec(brokers=1, controllers=1, run_dir=sys.argv[1]))
    cluster.start()
    print(json.dumps({"run_id": cluster.run_id, "reaper_pid": cluster.describe()["reaper_pid"]}), flush=True)
    threading.Event().wait()  # until killed
""")


def test_sigkilled_runner_leaves_no_container_or_network(tmp_path: Path):
    client = engine()
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path / "run")], stdout=subprocess.PIPE,
                              stderr=open(tmp_path / "runner.log", "wb"), text=True)
    try:
        line = runner.stdout.readline() if runner.stdout else ""
        assert line, f"the runner did not start its cluster:\n{(tmp_path / 'runner.log').read_text()}"
        run = json.loads(line)
        containers, networks = leftovers(client, run["run_id"])
        assert len(containers) == 3 and len(networks) == 1  # ZooKeeper, controller, broker; the run network
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(10)
        wait_for(lambda: leftovers(client, run["run_id"]) == ([], []), GRACE_S + 60,
                 lambda: f"the reaper removing run {run['run_id']}'s containers and network "
                         f"(left: {[c.name for c in leftovers(client, run['run_id'])[0]]})",
                 tmp_path / "run" / "reaper.log")
        wait_for(lambda: subprocess.run(["kill", "-0", str(run["reaper_pid"])], capture_output=True).returncode != 0,
                 30, "the reaper exiting once done")
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def test_clean_stop_leaves_nothing(make_cluster):
    cluster = make_cluster(brokers=1, controllers=1, backend="docker")
    containers, networks = leftovers(cluster.client, cluster.run_id)
    assert {c.labels["chaoskit.node"] for c in containers} == {"zookeeper-1", "controller-1", "broker-1"}
    assert all(not c.attrs["HostConfig"]["Privileged"] and c.attrs["HostConfig"]["CapDrop"] == ["ALL"]
               and c.attrs["Config"]["User"] == "10001:10001" for c in containers)
    assert [n.name for n in networks] == [f"chaoskit-{cluster.run_id}"]
    cluster.stop()
    assert leftovers(cluster.client, cluster.run_id) == ([], [])
