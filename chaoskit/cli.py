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


class UsageError(Exception):
    """A bad argument or configuration: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    from chaoskit import __version__

    parser = argparse.ArgumentParser(
        prog="chaoskit",
        description="Chaos testing for Kafka ordering guarantees (KIP-253, KIP-320, KIP-694, KAFKA-20029).",
    )
    parser.add_argument("--version", action="version", version=f"chaoskit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for spec in COMMANDS:
        module_name, func_name = spec.split(":")
        getattr(importlib.import_module(module_name), func_name)(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"chaoskit {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
