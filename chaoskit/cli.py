"""The `chaoskit` command.

Each subcommand lives beside the code it drives and is listed in COMMANDS as
"module:register"; `register(subparsers)` adds its parser and sets `func`.
Modules are imported only when listed, so `chaoskit --help` shows exactly the
commands that exist.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from chaoskit.run.options import BAD_INPUT, UsageError, one_line

COMMANDS: tuple[str, ...] = (
    "chaoskit.pluginmanager:register",
    "chaoskit.proxy.cli:register",
    "chaoskit.cluster.cli:register",
    "chaoskit.cluster.images_cli:register",
    "chaoskit.nemesis.cli:register",
    "chaoskit.client.admin_cli:register",
    "chaoskit.run.cli:register",
    "chaoskit.suite.nightly:register",
    "chaoskit.suite.mutate:register",
    "chaoskit.suite.matrix:register",
    "chaoskit.explore.cli:register",
    "chaoskit.checkers.cli:register",
    "chaoskit.history.export_cli:register",
)


class Parser(argparse.ArgumentParser):
    """argparse's parser, with its errors exiting BAD_INPUT (its own code, 2, is chaoskit's unknown)."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from chaoskit import __version__

    parser = Parser(
        prog="chaoskit",
        description="Chaos testing for Kafka ordering guarantees (KIP-253, KIP-320, KIP-694, KAFKA-20029).",
    )
    parser.add_argument("--version", action="version", version=f"chaoskit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for spec in COMMANDS:
        module_name, func_name = spec.split(":")
        getattr(importlib.import_module(module_name), func_name)(sub)
    for command in _commands(sub):  # a command whose help says nothing of its exit codes: the shared ones
        if "exit" not in f"{command.description or ''}{command.epilog or ''}".lower():
            command.epilog = "exit codes: 0 done, 1 failed, 3 bad input (one line says what and how to fix it)"
    return parser


def _commands(sub: Any) -> list[argparse.ArgumentParser]:
    """Every command's parser, and its actions' (cluster up, admin shrink)."""
    out = []
    for command in sub.choices.values():
        out.append(command)
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                out += _commands(action)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"chaoskit {args.command}: {one_line(str(exc))}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
