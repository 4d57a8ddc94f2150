"""What every command takes as input, read one way: durations ("90", "90s", "1.5m", "1h30m"),
comma-separated names, files; and bad input as one line (`UsageError`, exit code BAD_INPUT). The
command line (chaoskit/cli.py) and the subcommands beside their code read their options here."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

# exit codes every command shares: 0 done (clean), 1 an anomaly found, 2 unknown, BAD_INPUT for an
# argument, file or configuration it cannot use (never 1 or 2: bad input is not a verdict)
BAD_INPUT = 3


class UsageError(Exception):
    """Bad input (an argument, a file, a configuration): printed as one line, exit code BAD_INPUT."""


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


# --- the broker under test: one set of options for run, explore, matrix and cluster ----------------
def add_broker_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--broker", help="the broker under test: chaoskit (its own, default) or one a plugin adds (tansu)")
    p.add_argument("--broker-storage", help="its storage engine, for a broker that has them (tansu: sqlite, default, "
                                            "postgres or memory)")
    p.add_argument("--brokers", type=int, help="how many brokers (tansu: that many over postgres, one otherwise)")


def broker_changes(args: argparse.Namespace) -> dict[str, object]:
    """The ChaosTest fields the broker options set (only those given)."""
    given = {"broker": getattr(args, "broker", None), "broker_storage": getattr(args, "broker_storage", None),
             "brokers": getattr(args, "brokers", None)}
    if given["brokers"] is not None and given["brokers"] < 1:
        raise UsageError(f"--brokers is a count of brokers (1 or more), not {given['brokers']}")
    return {k: v for k, v in given.items() if v is not None}
