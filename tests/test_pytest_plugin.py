"""The pytest plugin is found through its pytest11 entry point and shows its option group."""
from __future__ import annotations

import subprocess
import sys

from chaoskit.pytest_plugin import OPTIONS

pytest_plugins = ["pytester"]


def test_pytest_help_shows_the_chaoskit_group():
    # a separate interpreter: the entry point, not this process's imports, must bring the plugin in
    out = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "chaoskit: chaos testing for Kafka ordering guarantees" in out.stdout
    for flag, *_ in OPTIONS:
        assert flag in out.stdout
    assert "--chaos-keep" in out.stdout


def test_markers_are_registered(pytester):
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.nightly
        @pytest.mark.docker
        @pytest.mark.chaos(duration=5)
        def test_x():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1)


def test_command_line_wins_over_ini(pytester):
    pytester.makeini("[pytest]\nchaos_seed = 11\nchaos_backend = docker\n")
    pytester.makepyfile(
        """
        from chaoskit.pytest_plugin import chaos_option
        def test_x(pytestconfig):
            assert chaos_option(pytestconfig, "chaos_seed") == "42"
            assert chaos_option(pytestconfig, "chaos_backend") == "docker"
            assert chaos_option(pytestconfig, "chaos_profile") == "both"
        """
    )
    result = pytester.runpytest("--chaos-seed=42")
    result.assert_outcomes(passed=1)


def test_bad_choice_is_rejected(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("--chaos-backend=kubernetes")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*invalid choice*kubernetes*"])
