"""Small text files replaced atomically (write a temp file, fsync, rename, fsync the directory).

A reader never sees half a checkpoint, even after kill -9 or power loss between the steps.
"""
from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, text: str, fsync: bool = True) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename or unlink inside `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_lines(path: Path) -> list[str] | None:
    """The file's non-empty lines, or None when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return [line for line in text.splitlines() if line.strip()]
