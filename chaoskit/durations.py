"""Durations as every chaoskit option takes them: plain seconds ("90", "2.5") or with units ("90s",
"10m", "1h", "1h30m", "2m30s")."""
from __future__ import annotations

import argparse
import re

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
