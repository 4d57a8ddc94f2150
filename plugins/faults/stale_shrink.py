"""`stale-shrink`: KIP-694's story of a producer whose metadata is a few seconds old when its topic
shrinks, staged so that only the broker's refusal of a Produce to a ReadOnly partition guards it.

On a topic with `enable.ordered.delivery=false` KIP-253's partition count check is off, so a
producer that has not yet heard of a shrink keeps routing keys to the partitions it marked, and
only the ReadOnly refusal sends it to ask again. Target `client`; params `topic`, `grow` (1 or 2,
default 1), `delay_ms` (KIP-694's delay; absent: removed once drained), `written_within_s` (5).

1. The topic grows by `grow` partitions (as the `admin` fault does; first waiting, up to 15 s, for
   partitions an earlier shrink marked to go).
2. It waits, up to `written_within_s`, for two acknowledged records on the new partitions: the
   producers' metadata has them, and some keys now live there.
3. The clients that can (`freeze_metadata()`, as the ordered client has) stop refreshing metadata
   by age; a stock client keeps what it has for its own `metadata.max.age.ms` anyway.
4. The topic shrinks back to its count before the growth: the new partitions turn ReadOnly. A
   frozen producer still routes their keys there; the broker refuses each such Produce (patched),
   or takes it (`write-to-readonly`).
The window's end thaws the clients, but never sooner than FROZEN_S after the shrink (the steps
before it may outlast the window). `resolved` holds `topic`, `from` (the count before), `grown`
and `frozen` (how many clients froze).

Without `delay_ms` a marked partition goes once the group has drained it, and a producer whose key
hashes there (the stock rule when ordered delivery is off) waits for that; the grammar always
draws a short delay, so the run stays short and the keys move on.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Mapping

from chaoskit.cluster import capabilities as caps
from chaoskit.nemesis.base import check_params
from chaoskit_plugins.faults.cluster_faults import AdminFault, current_topic, freezable

REMOVED_WITHIN_S = 15.0
FROZEN_S = 2.0  # at least this long a frozen producer keeps routing to the partitions just marked


class StaleShrinkFault(AdminFault):
    name = "stale-shrink"
    needs = frozenset({caps.KIP253, caps.KIP694})
    _shrunk_at = 0.0

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        from chaoskit.client.admin import AdminClient

        check_params(self.name, params, {"topic", "grow", "delay_ms", "written_within_s"})
        topic, grow = params.get("topic"), params.get("grow", 1)
        if not isinstance(topic, str) or not topic or grow not in (1, 2):
            raise ValueError(f"{self.name}: needs a topic and grow 1 or 2, got topic={topic!r} grow={grow!r}")
        with AdminClient(self.context.cluster.bootstrap_servers) as admin:
            info = current_topic(admin, self.context.cluster, topic)
        marked = bool(info.marked_for_deletion)
        before = info.undeleted_partition_count or len(info.partitions) - len(info.marked_for_deletion)
        AdminFault.start(self, target, {"op": "expand", "topic": topic, "to": before + grow,
                                        **({"removed_within_s": REMOVED_WITHIN_S} if marked else {})}, pick)
        self._await_records(topic, range(before, before + grow), float(params.get("written_within_s", 5)), 2)
        frozen = freezable(self.context.clients)
        for c in frozen:
            c.freeze_metadata()
        try:
            delay = {"delay_ms": params["delay_ms"]} if "delay_ms" in params else {}
            AdminFault.start(self, target, {"op": "shrink", "topic": topic, "to": before, **delay}, pick)
        except BaseException:
            self._thaw()  # a failed start leaves no window for the stop to close
            raise
        self._shrunk_at = time.monotonic()
        return {"topic": topic, "from": before, "grown": grow, "frozen": len(frozen)}

    def _thaw(self) -> None:
        for c in freezable(self.context.clients):
            c.thaw_metadata()

    def stop(self, state: dict[str, Any]) -> None:
        left = self._shrunk_at + FROZEN_S - time.monotonic()
        if left <= 0:
            self._thaw()
            return
        thaw = threading.Timer(left, self._thaw)  # the executor's window goes on: do not hold it up
        thaw.daemon = True
        thaw.start()
