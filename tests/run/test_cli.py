"""`chaoskit run TEST_JSON`: a file it cannot use is one line and exit 3; a file written by another
chaoskit version is run with a warning; a test that could only fail once its cluster is up (an unknown
client, fault or check, no topic) is bad input too, and starts nothing."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chaoskit.cluster.reaper import run_processes
from chaoskit.run.chaostest import VERSION_KEY, ChaosTest, Topic


def chaoskit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from chaoskit.cli import main; sys.exit(main())", *args],
                          capture_output=True, text=True, timeout=300)


def test_a_file_it_cannot_use_is_one_line_and_exit_3(tmp_path: Path):
    bad = tmp_path / "test.json"
    bad.write_text('{"name": "x", "colour": "red"}')
    out = chaoskit("run", str(bad))
    assert out.returncode == 3
    assert out.stderr.strip().splitlines() == [f"chaoskit run: {bad}: unknown field(s) "
                                                f"['colour']; known: {sorted(ChaosTest.__dataclass_fields__)}"]
    out = chaoskit("run", str(tmp_path / "missing.json"))
    assert out.returncode == 3 and "no such test.json" in out.stderr


def test_another_versions_file_runs_with_a_warning(tmp_path: Path):
    test = ChaosTest("x", duration_s=1, brokers=1, controllers=1, topics=[Topic("t", 1, 1)], checks=["lost-write"],
                     workload_options={"producers": 1, "consumers": 1, "rate": 20}, drain_timeout_s=10,
                     reports=tmp_path / "reports")
    path = tmp_path / "test.json"
    path.write_text(json.dumps({**test.to_json(), VERSION_KEY: "0.0.1"}))
    out = chaoskit("run", str(path), "--json")
    assert "was written by chaoskit 0.0.1" in out.stderr and "the replay may differ" in out.stderr
    result = json.loads(out.stdout)
    assert out.returncode == 0 and result["valid"] is True, out.stdout[-2000:]
    assert not run_processes(result["run_id"])


def test_a_test_that_could_only_fail_once_up_is_bad_input_and_starts_nothing(tmp_path: Path):
    test = ChaosTest("x", client="no-such-client", reports=tmp_path / "reports")
    path = tmp_path / "test.json"
    path.write_text(json.dumps({**test.to_json(), VERSION_KEY: "0.0.1"}))
    out = chaoskit("run", str(path))
    assert out.returncode == 3 and out.stderr.strip().splitlines() == [
        f"chaoskit run: {path}: no client named 'no-such-client'; installed: aiokafka, kafka-python, librdkafka, "
        "ordered, probe"]
    assert not (tmp_path / "reports").exists()
