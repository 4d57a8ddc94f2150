"""The `chaoskit` command.

Each subcommand lives beside the code it drives and is listed in COMMANDS as
"module:register"; `register(subparsers)` adds its parser and sets `func`.
Modules are imported only when listed, so `chaoskit --help` shows exactly the
commands that exist.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path
from typing import Any

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


# exit codes every command shares: 0 done (clean), 1 an anomaly found, 2 unknown, BAD_INPUT for an
# argument, file or configuration it cannot use (never 1 or 2: bad input is not a verdict)
BAD_INPUT = 3


class UsageError(Exception):
    """Bad input (an argument, a file, a configuration): printed as one line, exit code BAD_INPUT."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, with its errors exiting BAD_INPUT (its own code, 2, is chaoskit's unknown)."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(BAD_INPUT, f"{self.prog}: error: {message}\n")


# durations as every option takes them: plain seconds ("90", "2.5") or with units ("90s", "10m",
# "1h", "1h30m", "1.5m")
FORM = "a duration is like 90s, 10m, 1h or 1h30m (or plain seconds)"


def seconds(text: str | float) -> float:
    """`text` in seconds; ValueError saying the form."""
    text = str(text).strip()
    one = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smh]?)", text)  # 90, 90s, 1.5m
    if one:
        return float(one.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[one.group(2)]
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", text)
    if not text or parts is None or not any(parts.groups()):
        raise ValueError(f"{FORM}, not {text!r}")
    h, m, s = parts.groups()
    return int(h or 0) * 3600 + int(m or 0) * 60 + float(s or 0)


def duration_arg(text: str) -> float:
    """argparse's `type=` for a duration option."""
    try:
        return seconds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def names(text: str, option: str) -> list[str]:
    """A comma-separated option's names ("a, b,c"); UsageError when it names none."""
    found = [n.strip() for n in text.split(",") if n.strip()]
    if not found:
        raise UsageError(f"{option} names nothing ({text!r}); give comma-separated names")
    return found


def one_line(text: str) -> str:
    """`text` on one line: a line break a user's input carried into a message is shown, not obeyed."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def unreadable(path: Path, e: OSError, what: str = "file") -> UsageError:
    """An OSError reading `path` as one line that says what to do."""
    if isinstance(e, FileNotFoundError):
        return UsageError(f"{path}: no such {what}")
    if isinstance(e, IsADirectoryError):
        return UsageError(f"{path} is a folder; name a {what} in it")
    if isinstance(e, PermissionError):
        return UsageError(f"{path}: permission denied")
    return UsageError(f"{path}: {e.strerror or e}")


def unwritable(path: Path, e: OSError) -> UsageError:
    """An OSError writing `path` as one line that says what to do."""
    if isinstance(e, FileNotFoundError):
        return UsageError(f"cannot write {path}: its folder {path.parent} does not exist; create it or name another")
    if isinstance(e, IsADirectoryError):
        return UsageError(f"cannot write {path}: it is a folder; name a file")
    return UsageError(f"cannot write {path}: {e.strerror or e}")


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
