"""Which partitioning rule placed a topic's sends: the evidence that a client honoured the topic's
`enable.ordered.delivery` (linear hashing where it is true, stock Kafka's murmur2 modulo where it
is false), read from a run's history.
"""
from __future__ import annotations

from collections.abc import Iterable

from chaoskit.client.linear_hash import linear_partition, modulo_partition
from chaoskit.history.reader import History


def routing(history: History | str, topic: str, counts: Iterable[int], initial: int) -> dict[str, int]:
    """How the acknowledged keyed sends of `topic` were placed, with the partition counts it had:
    `linear` / `stock` explained by linear hashing / murmur2 modulo at some count, `linear_only` /
    `stock_only` by that rule and not the other, `neither` by no rule (a client breaking both)."""
    ops = history.ops if isinstance(history, History) else History.from_path(history).ops
    counts = sorted(counts)
    out = dict.fromkeys(("sends", "linear", "stock", "linear_only", "stock_only", "neither"), 0)
    for op in ops:
        if op.get("f") != "send" or op.get("type") != "ok" or op.get("topic") != topic or not op.get("key"):
            continue
        key = str(op["key"]).encode()
        linear = op["partition"] in {linear_partition(key, initial, n) for n in counts}
        stock = op["partition"] in {modulo_partition(key, n) for n in counts}
        out["sends"] += 1
        out["linear"] += linear
        out["stock"] += stock
        out["linear_only"] += linear and not stock
        out["stock_only"] += stock and not linear
        out["neither"] += not linear and not stock
    return out
