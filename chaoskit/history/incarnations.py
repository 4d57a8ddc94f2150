"""Partitions made again under an old number: told apart from the partition that had it before.

KIP-253 and KIP-694 remove partitions from the end of a topic; a later expansion creates the same
numbers again, with logs that start at offset 0. For the checks those are other partitions: the
old orders/6 offset 0 and the new one hold different records by design, the new one was never
ReadOnly, and a consumer's position in the old one says nothing about the new one.

The history shows it from the admin ops: a partition given a mode by a shrink (`partition-mode`
ReadOnly or None) and then covered by an expansion (`expand` ok with a count above it) was removed
and made again; an op after that expansion's ok names the new partition. The checks name the
k-th re-creation of partition p as `p + k * RECREATED` (orders/6 made again: orders/10006), so
witnesses show which one they mean. A history with no such sequence is judged as it is.

A partition's removal shows either way: a `partition-removed` op (process "admin", ok: a ZooKeeper
watch saw it leave the topic's assignment, so it went before that op) or the expansion that made it
again (KIP-253 grows a topic only once its marked partitions are gone).
"""
from __future__ import annotations

from typing import Any, Iterable

RECREATED = 10_000
LEAVING_MODES = ("ReadOnly", "None")


def _count(value: Any) -> int | None:
    count = value.get("count") if isinstance(value, dict) else None
    return count if isinstance(count, int) else None


def _mode(value: Any) -> str | None:
    return value.get("mode") if isinstance(value, dict) else None


class Incarnations:
    """Fed the ops in index order (`observe`), names each (topic, partition) as of that point."""

    def __init__(self) -> None:
        self._leaving: dict[str, set[int]] = {}
        self._made: dict[tuple[str, int], int] = {}  # how often the partition was made again
        # (topic, the checks' name of a partition) -> the first op its removal came before
        self.gone: dict[tuple[str, int], int] = {}

    def observe(self, op: dict[str, Any]) -> list[tuple[str, int, int]]:
        """Take in the op; the (topic, partition, k) it made again for the k-th time, if any."""
        if op.get("process") != "admin" or op.get("type") != "ok":
            return []
        f, topic, p = op.get("f"), op.get("topic") or "", op.get("partition")
        if f == "partition-removed" and isinstance(p, int):
            self.gone.setdefault((topic, self.partition(topic, p)), op["index"])
        elif f == "partition-mode" and _mode(op.get("value")) in LEAVING_MODES and isinstance(p, int):
            self._leaving.setdefault(topic, set()).add(p)
        elif f == "expand" and (count := _count(op.get("value"))) is not None:
            again = sorted(q for q in self._leaving.get(topic, ()) if q < count)
            for q in again:
                self.gone.setdefault((topic, self.partition(topic, q)), op["index"])
                self._made[(topic, q)] = self._made.get((topic, q), 0) + 1
            self._leaving[topic] = self._leaving.get(topic, set()) - set(again)
            return [(topic, q, self._made[(topic, q)]) for q in again]
        return []

    def partition(self, topic: str, partition: Any) -> Any:
        made = self._made.get((topic, partition)) if self._made else None
        return partition + made * RECREATED if made else partition


def replayed(ops: Iterable[dict[str, Any]]) -> tuple[list[tuple[str, int, int, int]], dict[tuple[str, int], int]]:
    """(topic, partition, the index of the expansion's ok op, k) for each re-creation in a history, in
    order: ops after that index name partition `partition + k * RECREATED` (up to the next one); and
    {(topic, the checks' name of a partition): the first op its removal came before}."""
    seen = Incarnations()
    return [(t, p, op["index"], k) for op in ops for t, p, k in seen.observe(op)], seen.gone


def recreations(ops: Iterable[dict[str, Any]]) -> list[tuple[str, int, int, int]]:
    """The re-creations of `replayed`."""
    return replayed(ops)[0]
