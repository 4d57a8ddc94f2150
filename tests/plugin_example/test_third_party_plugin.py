"""A third-party plugin, as docs/plugins.md writes it, installed with pip (into a scratch
directory, not the project's venv) and used: listed by `chaoskit plugins`, its fault accepted by a
schedule and run against a real ZooKeeper node, its check run by `chaoskit check`."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    src = tmp_path_factory.mktemp("plugin-src")
    code = next(b for b in blocks("python") if "chaoskit_add_faults" in b)
    (src / "chaoskit_pausezk.py").write_text(code)
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "chaoskit-pausezk"\nversion = "0.1"\n[tool.setuptools]\npy-modules = ["chaoskit_pausezk"]\n'
        + blocks("toml")[0])
    target = tmp_path_factory.mktemp("site")
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--target", str(target), str(src)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")]))}


def chaoskit(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from chaoskit.cli import main; sys.exit(main())", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_the_installed_plugin_is_listed_beside_the_built_ins(installed):
    out = chaoskit(installed, "plugins", "--json")
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    assert "pause-zookeeper" in listing["faults"] and "partition" in listing["faults"]
    assert "no-failed-sends" in listing["checks"]


def test_its_check_runs_from_chaoskit_check(installed, tmp_path):
    history = tmp_path / "history.jsonl"
    ops = [{"index": 0, "process": 0, "type": "invoke", "f": "send", "value": [0, "k1", 0]},
           {"index": 1, "process": 0, "type": "fail", "f": "send", "value": [0, "k1", 0], "error": "refused"}]
    history.write_text("".join(json.dumps(op) + "\n" for op in ops))
    out = chaoskit(installed, "check", str(history), "--checks", "no-failed-sends", "--engine", "local", "--json")
    assert out.returncode == 1, out.stdout + out.stderr  # invalid: the plugin's check found the failed send
    result = json.loads(out.stdout)["results"]["no-failed-sends"]
    assert result["valid"] is False and result["counts"] == {"failed": 1}


def test_its_fault_is_scheduled_and_pauses_a_real_zookeeper(installed, make_cluster, tmp_path):
    spec = {"duration_s": 10, "mean_interval_s": 2, "window_s": [1, 2],
            "faults": {"pause-zookeeper": {"weight": 1, "targets": ["client"]}}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    out = chaoskit(installed, "schedule", str(tmp_path / "spec.json"), "--seed", "3")
    assert out.returncode == 0, out.stderr
    assert '"pause-zookeeper"' in out.stdout

    script = tmp_path / "use_fault.py"
    script.write_text(
        "import json, sys\n"
        "from chaoskit.cluster.local import LocalCluster\nfrom chaoskit.cluster.spec import ClusterSpec\n"
        "from chaoskit import Run\nfrom chaoskit.nemesis.ops import fault_op\n"
        "from chaoskit.nemesis.schedule import generate\nfrom chaoskit.pluginmanager import lookup\n"
        "import psutil\nfrom chaoskit.cluster.waiting import wait_for\n"
        f"window = generate(json.load(open({str(tmp_path / 'spec.json')!r})), 3).windows[0]\n"
        "fault = lookup('faults', 'pause-zookeeper')()\n"
        f"with LocalCluster(ClusterSpec(brokers=1, controllers=1, run_dir={str(tmp_path / 'run')!r})) as cluster:\n"
        "    run = Run.around(cluster)\n"
        "    fault.setup(run)\n"
        "    started = fault.invoke(run, fault_op('start', window))\n"
        "    proc = psutil.Process(cluster.zookeeper.nodes[0].pid)\n"
        "    wait_for(lambda: proc.status() == 'stopped', 10, 'zookeeper-1 stopped by SIGSTOP')\n"
        "    status = proc.status()\n"
        "    fault.invoke(run, fault_op('stop', window))\n"
        "    after = psutil.Process(cluster.zookeeper.nodes[0].pid).status()\n"
        "    print(json.dumps({'resolved': started['value']['resolved'], 'during': status, 'after': after}))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=installed, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["resolved"] == {"node": "zookeeper-1"}
    assert seen["during"] == "stopped" and seen["after"] != "stopped"
