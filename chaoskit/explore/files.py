"""The explore's files: a JSON object read whole ({} when the file is missing or torn), JSON lines
read one by one (a line cut short by a kill is skipped, the others count), and writes renamed into
place (chaoskit.suite.cells' `write_atomically`), so a killed explore never leaves half a file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from chaoskit.run.files import write_atomically

__all__ = ["read_json", "read_lines", "write_atomically"]


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with Path(path).open() as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
    except OSError:
        return
