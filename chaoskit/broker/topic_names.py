"""Kafka's rule for topic names, which also makes them safe as directory names under log.dirs."""
from __future__ import annotations

import re

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def legal_topic_name(name: str) -> bool:
    """1-249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    return bool(_LEGAL_NAME.match(name)) and name not in (".", "..")
