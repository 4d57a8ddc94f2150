"""The public face (chaoskit/__init__.py): what suites and plugins import, loaded on first use."""
from __future__ import annotations

import subprocess
import sys

import chaoskit


def test_every_public_name_loads():
    for name in chaoskit.__all__:
        assert getattr(chaoskit, name) is not None, name


def test_run_is_callable_whether_or_not_the_run_package_was_imported_first():
    code = ("import chaoskit.run.runner\nfrom chaoskit import run, ChaosTest, Topic, mix, admin_step\n"
            "assert callable(run)\n"
            "import inspect; print(inspect.signature(run.__call__))")
    for first in ("", "import chaoskit.run.chaostest\n"):
        out = subprocess.run([sys.executable, "-c", first + code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "(test, progress=False, keep=False)" in out.stdout, out.stderr


def test_importing_chaoskit_does_not_import_the_run():
    """Broker, controller and proxy processes import chaoskit's packages: they must not pay for the run."""
    out = subprocess.run([sys.executable, "-c", "import chaoskit, chaoskit.proxy, sys; "
                          "print(sorted(m for m in sys.modules if m.startswith(('chaoskit.run', 'pyspark', 'rich'))))"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
