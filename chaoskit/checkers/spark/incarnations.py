"""history/incarnations.py on Spark: partitions made again after their removal, renamed as the local
engine names them (the k-th re-creation of p is p + RECREATED * k from the expansion's ok op on).

The admin ops that show a re-creation are few: they are collected (one filtered scan of the
history's rows, before any table) and the renaming is one column expression, so a history without
any costs that scan and nothing else.
"""
from __future__ import annotations

from typing import Any

import orjson

from chaoskit.history.incarnations import RECREATED, replayed


def replayed_from(frame: Any) -> tuple[list[tuple[str, int, int, int]], dict[tuple[str, int], int]]:
    """The history's re-creations and removals (history/incarnations.py `replayed`)."""
    from pyspark.sql import functions as F

    rows = (frame.filter((F.col("process") == "admin") & (F.col("type") == "ok")
                         & F.col("f").isin("partition-mode", "expand", "partition-removed"))
            .select("index", "f", "topic", "partition", "value").orderBy("index").collect())
    return replayed({"index": r["index"], "process": "admin", "type": "ok", "f": r["f"], "topic": r["topic"],
                        "partition": r["partition"], "value": orjson.loads(r["value"]) if r["value"] else None}
                       for r in rows)


def renamed(made: list[tuple[str, int, int, int]], topic: Any, partition: Any, index: Any) -> Any:
    """`partition` as the checks name it at op `index` (columns; `made` from `replayed_from`)."""
    from pyspark.sql import functions as F

    if not made:
        return partition
    named = None
    for t, p, at, k in reversed(made):  # the latest re-creation an op comes after decides
        hit = (topic == t) & (partition == p) & (index > at)
        named = F.when(hit, F.lit(p + k * RECREATED)) if named is None else named.when(hit, F.lit(p + k * RECREATED))
    return named.otherwise(partition)
