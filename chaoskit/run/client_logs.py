"""Stock client libraries' log lines go to the run's clients.log, never to the terminal.

kafka-python (logger `kafka`), aiokafka (`aiokafka`) and librdkafka (through confluent-kafka's
`logger` setting, logger `librdkafka`) log what the run's faults do to them: disconnects, leader
moves, partition counts changing. Those are other programs' lines: they belong beside the
brokers' logs in reports/runs/<id>/, not in the terminal or in a failing test's report.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

LIBRARIES = ("kafka", "aiokafka", "librdkafka")
LIBRDKAFKA = logging.getLogger("librdkafka")  # confluent-kafka's `logger` setting
FILE = "clients.log"


@contextmanager
def client_logs(run_dir: Path) -> Iterator[Path]:
    """While the run lasts, the libraries' lines (at their usual level) go to run_dir/clients.log
    alone; afterwards, where they went before."""
    path = run_dir / FILE
    handler = logging.FileHandler(path, delay=True)  # no file for a run whose libraries said nothing
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved = [(logger, logger.propagate) for logger in map(logging.getLogger, LIBRARIES)]
    for logger, _ in saved:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        yield path
    finally:
        for logger, propagate in saved:
            logger.removeHandler(handler)
            logger.propagate = propagate
        handler.close()
