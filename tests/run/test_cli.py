"""`chaoskit run TEST_JSON`: a file it cannot use is one line and exit 3; a file written by another
chaoskit version is run with a warning; a run that cannot start is unknown (exit 2) and starts nothing."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chaoskit.cluster.reaper import run_processes
from chaoskit.run.chaostest import VERSION_KEY, ChaosTest


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
    test = ChaosTest("x", client="no-such-client", reports=tmp_path / "reports")
    path = tmp_path / "test.json"
    path.write_text(json.dumps({**test.to_json(), VERSION_KEY: "0.0.1"}))
    out = chaoskit("run", str(path), "--json")
    assert "was written by chaoskit 0.0.1" in out.stderr and "the replay may differ" in out.stderr
    result = json.loads(out.stdout)
    assert out.returncode == 2 and result["valid"] == "unknown" and "no client named 'no-such-client'" in result["error"]
    assert not run_processes(result["run_id"])
