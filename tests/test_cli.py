"""The `chaoskit` command: --help lists exactly the commands that exist."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from chaoskit import cli


def run_cli(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("chaoskit")  # the console script installed beside the venv's python
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def listed_commands(help_text: str) -> set[str]:
    block = help_text.split("COMMAND", 2)[-1]
    return set(re.findall(r"^\s{4}(\w[\w-]*)\s", block, re.M))


def test_help_lists_exactly_the_registered_commands():
    out = run_cli("--help")
    assert out.returncode == 0, out.stderr
    registered = set(cli.build_parser()._subparsers._group_actions[0].choices)
    assert registered, "no commands registered"
    assert listed_commands(out.stdout) == registered
    for name in registered:
        sub = run_cli(name, "--help")
        assert sub.returncode == 0, f"`chaoskit {name} --help` failed: {sub.stderr}"


def test_unknown_command_is_a_usage_error():
    out = run_cli("no-such-command")
    assert out.returncode == 3  # bad input, never 2 (unknown)
    assert "invalid choice" in out.stderr


def test_plugins_lists_the_builtin_plugin():
    out = run_cli("plugins", "--json")
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    assert "builtin" in listing["plugins"]
    assert set(listing) == {"plugins", "faults", "workloads", "clients", "checks", "steps", "brokers"}
    assert listing["brokers"] == ["chaoskit", "tansu"]
    assert {"lost-write", "key-order", "truncation-undetected", "linearizable"} <= set(listing["checks"])


def test_version_matches_the_distribution():
    from chaoskit import __version__

    out = run_cli("--version")
    assert out.stdout.strip() == f"chaoskit {__version__}"


def test_every_command_and_action_names_its_exit_codes():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    commands = cli._commands(sub)
    assert {"up", "down", "build", "shrink"} <= {c.prog.split()[-1] for c in commands}  # the actions too
    silent = [c.prog for c in commands if "exit" not in c.format_help().lower().replace("help message and exit", "")]
    assert not silent, f"--help says nothing of exit codes: {silent}"
