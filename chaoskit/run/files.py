"""Files written whole: a reader (another process, a resumed explore, a killed run's report) sees
the old text or the new one, never half of one."""
from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` whole (a crash mid-way leaves the old file, never half a new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
