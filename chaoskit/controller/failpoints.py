"""Failpoints: named places in the controller's multi-step work where a test can make it stop.

`controller.failpoints` (docs/internals.md §1) lists names; when the event thread reaches one of
them it logs `failpoint <name> reached` and stops handling events (ZooKeeper session and all) until
the process is stopped, so a test can kill it there with SIGKILL and check that the next controller
finishes the step. Empty by default; unknown names are a config error.
"""
from __future__ import annotations

import logging
import threading

log = logging.getLogger("chaoskit.controller.failpoints")

# name -> where it is
FAILPOINTS: dict[str, str] = {
    "expansion.after-create": "new partitions' state znodes written, older partitions' epochs not yet bumped",
    "deletion.after-mark": "partitions marked ReadOnly with leaderEpochBeforeDeletion, undeleted ones not yet bumped",
    "bump.after-first": "the first leader epoch of an expansion or deletion bumped, the rest not",
    "removal.after-none": "a partition set to mode None, no StopReplica sent yet",
    "removal.before-remove": "every replica deleted a partition, its znodes not yet removed",
}


class Failpoints:
    def __init__(self, names: frozenset[str], stopping: threading.Event) -> None:
        self.names, self.stopping = names, stopping  # names are checked by the config

    def hit(self, name: str) -> None:
        """Stop here (until the process stops) if `name` is armed."""
        assert name in FAILPOINTS, name
        if name in self.names:
            log.warning("failpoint %s reached (%s): the event thread stops here", name, FAILPOINTS[name])
            self.stopping.wait()
            raise SystemExit(f"stopped at failpoint {name}")
