"""LocalEngine: the Kafka checks over local/tables.py's tables, each a function of local/checks.py."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from chaoskit.checkers.catalog import Check
from chaoskit.checkers.findings import Found
from chaoskit.history.reader import History


@dataclass(frozen=True)
class LocalEngine:
    name: str = "local"

    @contextmanager
    def tables(self, history: History) -> Iterator[Any]:
        from chaoskit.checkers.local.tables import build

        # millions of small acyclic objects: the cyclic collector would only rescan them, again and again
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield build(history.ops)
        finally:
            if collecting:
                gc.enable()

    def evaluate(self, checks: Sequence[Check], tables: Any) -> dict[str, Found]:
        from chaoskit.checkers.local import checks as functions

        return {c.name: getattr(functions, c.function)(tables) for c in checks}
