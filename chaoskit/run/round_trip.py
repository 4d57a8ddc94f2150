"""Export -> check round trip: a history exported to Jepsen's Kafka EDN and read back must give the
same result for every Kafka check the format carries (the suites' runs prove it when the ini key
`chaos_export_round_trip` is on, as this repository's pyproject sets; docs/history.md).

Compared: every Kafka check of the catalog (valid, counts, witnesses without their place in the
run's time and faults: the export keeps no fault windows). Not compared, by rule:
`linearizable` (it reads register/kv/list-append ops, which the Kafka format does not describe) and
checks a third party registered (the format keeps only what the catalog's checks read).
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from chaoskit.checkers.catalog import JEPSEN_CHECKS, KAFKA_CHECKS
from chaoskit.checkers.situate import unsituated
from chaoskit.history.jepsen_kafka_write import write_jepsen_kafka
from chaoskit.history.reader import History


def round_trip_differences(history: Any, out: Path | None = None) -> list[str]:
    """One line per Kafka check whose result differs once `history` (a History or a path) is
    exported to Jepsen EDN and read back, both checked on the local engine; [] when none does."""
    from chaoskit.run.checks import run_checks

    original = history if isinstance(history, History) else History.from_path(history)
    names = [c.name for c in (*KAFKA_CHECKS, *JEPSEN_CHECKS)]
    with tempfile.TemporaryDirectory(prefix="chaoskit-round-trip-") as tmp:
        back = History.from_path(write_jepsen_kafka(original.ops, out or Path(tmp) / "history.edn"))
        before, after = run_checks(original, names, engine="local"), run_checks(back, names, engine="local")
    was, now = ({n: unsituated(v.results[n].to_json()) for n in names} for v in (before, after))
    diffs = [f"{name}: {was[name]} before the export, {now[name]} after" for name in names if was[name] != now[name]]
    if back.problems:
        diffs.append(f"the exported history has problems of its own: {back.problems[:3]}")
    return diffs
