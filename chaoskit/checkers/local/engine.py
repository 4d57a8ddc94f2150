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
        from chaoskit.history.jepsen_kafka import jepsen_fs

        # millions of small acyclic objects: the cyclic collector would only rescan them, again and again
        collecting = gc.isenabled()
        gc.disable()
        try:
            tables = build(history.ops)
            tables.jepsen = bool(jepsen_fs(history))
            yield tables
        finally:
            if collecting:
                gc.enable()

    def evaluate(self, checks: Sequence[Check], tables: Any) -> dict[str, Found]:
        from chaoskit.checkers.local import checks as ours
        from chaoskit.checkers.local import jepsen_checks

        return {c.name: jepsen_checks.pick(ours, jepsen_checks, c.function, tables.jepsen)(tables) for c in checks}
