"""The checks as Spark jobs over the Parquet history (engine "spark"): the logic of local/checks.py.

Each check is a few joins and window functions over the tables of spark/tables.py, planned as a
`Plan` (its anomaly rows and their order), and `evaluate` runs every plan in one job, giving each
check's count and first rows in the same order as the local engine.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from chaoskit.checkers.catalog import NOT_MOVED, OUT_OF_ORDER
from chaoskit.checkers.findings import Found, Row
from chaoskit.checkers.local.tables import READONLY_MODES
from chaoskit.checkers.result import MAX_WITNESSES as LIMIT
from chaoskit.checkers.spark.tables import SparkTables
from chaoskit.history.schema import KEY_ASSIGNED, KEY_REVOKED, process_of


@dataclass
class Plan:
    """One check as Spark will run it: its anomaly rows in `order`, extra counts (one-row
    DataFrames of a column `n`), and a fix-up of each collected row."""

    df: Any
    order: list[str]
    counts: dict[str, Any] = field(default_factory=dict)
    post: Callable[[Row], None] | None = None


def _found(df: Any, order: list[str], post: Callable[[Row], None] | None = None, **counts: Any) -> Plan:
    return Plan(df, order, counts, post)


def evaluate(plans: dict[str, Plan]) -> dict[str, Found]:
    """Every plan's count, first rows and extra counts in ONE Spark job (one union, one collect):
    a job per check would cost more than the checks themselves on small histories."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    everything = Window.partitionBy(F.lit(1))  # the whole (small) anomaly set of one check
    parts = []
    for name, plan in plans.items():
        cols = [F.col(c) for c in plan.df.columns]
        ranked = (plan.df.withColumn("_rank", F.row_number().over(everything.orderBy(*plan.order)))
                  .withColumn("_n", F.count(F.lit(1)).over(everything)))
        parts.append(ranked.filter(F.col("_rank") <= LIMIT).select(
            F.lit(name).alias("check"), F.lit("").alias("count"), F.col("_rank").cast("long").alias("rank"),
            F.col("_n").cast("long").alias("n"),
            F.to_json(F.struct(*cols), {"ignoreNullFields": "false"}).alias("row")))
        for count_name, cdf in plan.counts.items():
            parts.append(cdf.select(F.lit(name).alias("check"), F.lit(count_name).alias("count"),
                                    F.lit(0).cast("long").alias("rank"), F.col("n").cast("long").alias("n"),
                                    F.lit(None).cast("string").alias("row")))
    found = {name: Found(0, [], {}) for name in plans}
    if not parts:
        return found
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    ranked_rows: dict[str, list[tuple[int, Row]]] = {name: [] for name in plans}
    for r in union.collect():
        f = found[r["check"]]
        if r["count"]:
            f.counts[r["count"]] = int(r["n"])
            continue
        f.count = int(r["n"])
        row = json.loads(r["row"])
        if "process" in row:
            row["process"] = process_of(row["process"])
        ranked_rows[r["check"]].append((r["rank"], row))
    for name, rows in ranked_rows.items():
        plan = plans[name]
        for _, row in sorted(rows, key=lambda x: x[0]):
            if plan.post is not None:
                plan.post(row)
            found[name].rows.append(row)
    return found


def _one_count(df: Any) -> Any:
    from pyspark.sql import functions as F
    return df.agg(F.count(F.lit(1)).alias("n"))


_SEND_COLS = ["process", "key", "value", "topic", "partition", "offset", "index"]


def _never_read(t: SparkTables, lost: bool) -> Plan:
    F = t.F
    max_read = t.deliveries.groupBy("topic", "partition").agg(F.max("offset").alias("max_read"))
    never = t.acked.join(t.deliveries.select("value").distinct(), ["value"], "left_anti") \
        .join(max_read, ["topic", "partition"], "left")
    if lost:
        df = never.filter(F.col("max_read") > F.col("offset")).select(*_SEND_COLS, "max_read")
    else:
        df = never.filter(F.col("max_read").isNull() | (F.col("max_read") <= F.col("offset"))).select(*_SEND_COLS)
    read = t.acked.join(t.deliveries.select("value").distinct(), ["value"], "left_semi")
    return _found(df, ["index"], acked=_one_count(t.acked), acked_read=_one_count(read))


def lost_write(t: SparkTables) -> Plan:
    return _never_read(t, lost=True)


def unseen(t: SparkTables) -> Plan:
    return _never_read(t, lost=False)


def duplicate(t: SparkTables) -> Plan:
    """One value at two places; a place whose offset later held another value (a truncation replaced
    it) does not count, as in the local engine."""
    F = t.F
    seen = t.observations.filter(F.col("value").isNotNull())
    last = (seen.groupBy("topic", "partition", "offset").agg(F.max_by("value", "index").alias("last"))
            .withColumnsRenamed({"topic": "l_topic", "partition": "l_partition", "offset": "l_offset"}))
    at = (seen["topic"].eqNullSafe(last["l_topic"]) & (seen["partition"] == last["l_partition"])
          & (seen["offset"] == last["l_offset"]) & (seen["value"] == last["last"]))  # null topics: Jepsen's
    df = (seen.join(last, at).groupBy("value")
          .agg(F.collect_set(F.struct("topic", "partition", "offset")).alias("places"))
          .withColumn("count", F.size("places")).filter(F.col("count") > 1))
    return _found(df, ["value"], post=_positions, values=_one_count(seen.select("value").distinct()))


def _positions(row: Row) -> None:
    row["positions"] = sorted([p["topic"], p["partition"], p["offset"]] for p in row.pop("places"))


def _offset_values(t: SparkTables) -> Any:
    """(topic, partition, offset, values): the values each offset was seen holding, sorted."""
    F = t.F
    return (t.observations.filter(F.col("value").isNotNull()).groupBy("topic", "partition", "offset")
            .agg(F.array_sort(F.collect_set("value")).alias("values")))


def inconsistent_offsets(t: SparkTables) -> Plan:
    F = t.F
    offsets = _offset_values(t)
    return _found(offsets.filter(F.size("values") > 1), ["topic", "partition", "offset"], offsets=_one_count(offsets))


def _replaced_offsets(t: SparkTables) -> Any:
    """(topic, partition, offset) seen holding two different values: a truncation replaced what was there."""
    F = t.F
    return t.kept(_offset_values(t).filter(F.size("values") > 1).select("topic", "partition", "offset"))


def _poll_steps(t: SparkTables) -> Any:
    from pyspark.sql import Window
    F = t.F
    events = (t.deliveries.withColumn("is_assign", F.lit(0))
              .unionByName(t.resets.withColumn("is_assign", F.lit(1)), allowMissingColumns=True))
    by_index = Window.partitionBy("process").orderBy("index", "pos") \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    era = events.withColumn("era", F.sum("is_assign").over(by_index)).filter(F.col("is_assign") == 0)
    step = Window.partitionBy("process", "topic", "partition", "era").orderBy("index", "pos")
    return (era.withColumn("from_offset", F.lag("offset").over(step)).filter(F.col("from_offset").isNotNull())
            .select("process", "topic", "partition", "from_offset", F.col("offset").alias("to_offset"), "index"))


_STEP_ORDER = ["index", "partition", "to_offset"]


def _step_count(t: SparkTables) -> Any:
    return _one_count(_poll_steps(t))


def poll_skip(t: SparkTables) -> Plan:
    from pyspark.sql import Window
    F = t.F
    known = t.observations.select("topic", "partition", "offset").distinct() \
        .withColumn("rank", F.dense_rank().over(Window.partitionBy("topic", "partition").orderBy("offset")))
    k_from = known.select("topic", "partition", F.col("offset").alias("from_offset"), F.col("rank").alias("r_from"))
    k_to = known.select("topic", "partition", F.col("offset").alias("to_offset"), F.col("rank").alias("r_to"))
    df = (_poll_steps(t).filter(F.col("to_offset") > F.col("from_offset"))
          .join(k_from, ["topic", "partition", "from_offset"]).join(k_to, ["topic", "partition", "to_offset"])
          .withColumn("missed", F.col("r_to") - F.col("r_from") - 1).filter(F.col("missed") > 0)
          .select("process", "topic", "partition", "from_offset", "to_offset", "index", "missed"))
    return _found(df, _STEP_ORDER, steps=_step_count(t))


def nonmonotonic_poll(t: SparkTables) -> Plan:
    """A step back over an offset a truncation replaced is KIP-320's re-read (local/checks.py says why)."""
    F = t.F
    back = _poll_steps(t).filter(F.col("to_offset") <= F.col("from_offset"))
    replaced = _replaced_offsets(t).select(F.col("topic").alias("r_topic"), F.col("partition").alias("r_partition"),
                                           F.col("offset").alias("r_offset"))
    over = ((F.col("r_topic") == F.col("topic")) & (F.col("r_partition") == F.col("partition"))
            & (F.col("r_offset") >= F.col("to_offset")) & (F.col("r_offset") <= F.col("from_offset")))
    return _found(back.join(replaced, over, "left_anti"), _STEP_ORDER, steps=_step_count(t))


def nonmonotonic_send(t: SparkTables) -> Plan:
    from pyspark.sql import Window
    F = t.F
    w = Window.partitionBy("process", "topic", "partition").orderBy("index")
    pairs = t.acked.withColumn("from_offset", F.lag("offset").over(w)).filter(F.col("from_offset").isNotNull())
    df = (pairs.filter(F.col("offset") <= F.col("from_offset"))
          .select("process", "topic", "partition", "from_offset", F.col("offset").alias("to_offset"), "index"))
    return _found(df, ["index"], send_pairs=_one_count(pairs))


def key_order(t: SparkTables) -> Plan:
    from pyspark.sql import Window
    F = t.F
    first = t.deliveries.groupBy("value").agg(F.min(F.struct("index", "pos", "topic", "partition")).alias("first"))
    sends = t.sends.filter(F.col("key").isNotNull()).join(first, ["value"])
    w = Window.partitionBy("process", "key").orderBy("index")
    pairs = (sends.select("process", "key", "index", "partition", "value", "first",
                          F.lag("value").over(w).alias("prev_value"), F.lag("partition").over(w).alias("prev_partition"),
                          F.lag("first").over(w).alias("prev_first"))
             .filter(F.col("prev_first").isNotNull()))
    all_pairs = pairs
    a, b = F.col("prev_first"), F.col("first")
    out_of_order = F.struct(b.index, b.pos) < F.struct(a.index, a.pos)
    between_partitions = (a.topic == b.topic) & (a.partition != b.partition)
    # the few pairs either rule reads (keys rarely move), computed once for their several uses below
    pairs = t.kept(pairs.filter(out_of_order | between_partitions))

    def rows(df: Any, reason: Any) -> Any:
        return df.select("process", "key", F.col("prev_value").alias("first"), F.col("value").alias("second"),
                         F.col("prev_partition").alias("first_partition"), F.col("partition").alias("second_partition"),
                         a.index.alias("first_delivered"), b.index.alias("second_delivered"), "index",
                         reason.alias("reason"))

    # in order, between partitions of a topic whose client records key callbacks (few pairs: keys move rarely)
    keyed = t.key_callbacks.select(F.col("topic").alias("ktopic")).distinct()
    cross = (pairs.filter(~out_of_order & between_partitions)
             .join(keyed, a.topic == F.col("ktopic"), "left_semi"))
    revoked, assigned = _key_callbacks(t, KEY_REVOKED, "r"), _key_callbacks(t, KEY_ASSIGNED, "s")
    # the earliest key-revoked of A's partition after A leaves the most room for B's key-assigned
    first_revoke = (cross.select("index", a.topic.alias("topic"), a.partition.alias("pa"), a.index.alias("ia"),
                                 b.partition.alias("pb"), b.index.alias("ib"))
                    .join(revoked, (F.col("r_topic") == F.col("topic")) & (F.col("r_partition") == F.col("pa"))
                          & (F.col("r") > F.col("ia")) & (F.col("r") < F.col("ib")))
                    .groupBy("index", "topic", "pb", "ib").agg(F.min("r").alias("r")))
    moved = first_revoke.join(assigned, (F.col("s_topic") == F.col("topic")) & (F.col("s_partition") == F.col("pb"))
                              & (F.col("s") > F.col("r")) & (F.col("s") < F.col("ib")), "left_semi").select("index")
    unmoved = cross.join(moved, ["index"], "left_anti")
    df = rows(pairs.filter(out_of_order), F.lit(OUT_OF_ORDER)).unionByName(
        rows(unmoved, F.format_string(NOT_MOVED, a.partition, b.partition)))
    return _found(df, ["index"], key_pairs=_one_count(all_pairs), moved_pairs=_one_count(pairs.filter(between_partitions)),
                  cross_partition_pairs=_one_count(cross))


def _key_callbacks(t: SparkTables, f: str, name: str) -> Any:
    """(name_topic, name_partition, name): the `f` key callbacks, the index as `name`."""
    F = t.F
    return t.key_callbacks.filter(F.col("f") == f).select(F.col("topic").alias(f"{name}_topic"),
                                                          F.col("partition").alias(f"{name}_partition"),
                                                          F.col("index").alias(name))


def truncation_undetected(t: SparkTables) -> Plan:
    """Replaced reads (deliveries whose offset later held other content) that nobody read again at
    or below their offset, and no truncation at or below it was reported, afterwards (local/checks.py)."""
    from pyspark.sql import Window
    F = t.F
    d = t.deliveries.alias("d")
    o = t.observations.alias("o")
    replaced = (d.join(o, (F.col("d.topic") == F.col("o.topic")) & (F.col("d.partition") == F.col("o.partition"))
                       & (F.col("d.offset") == F.col("o.offset")) & (F.col("o.index") > F.col("d.index"))
                       & F.col("o.value").isNotNull() & ~F.col("o.value").eqNullSafe(F.col("d.value")))
                .groupBy("d.process", "d.topic", "d.partition", "d.offset", "d.value", "d.index", "d.pos")
                .agg(F.array_sort(F.collect_set("o.value")).alias("later")))
    replaced = t.kept(replaced)
    # the lowest offset of the partition read or reported truncated after each index: a range frame
    # over the index, so a later record of the same poll does not count
    points = (t.deliveries.select("topic", "partition", "index", "offset")
              .unionByName(t.truncations.select("topic", "partition", "index", "offset")))
    after = Window.partitionBy("topic", "partition").orderBy("index").rangeBetween(1, Window.unboundedFollowing)
    later_low = (points.withColumn("low", F.min("offset").over(after))
                 .groupBy("topic", "partition", "index").agg(F.min("low").alias("low")))
    # a replaced read is a delivery, so a point of its own: its row has the `low` of everything later
    judged = replaced.join(later_low, ["topic", "partition", "index"], "left")
    df = (judged.filter(F.col("low").isNull() | (F.col("low") > F.col("offset")))
          .select("process", "topic", "partition", "offset", "value", "index", "later"))
    return _found(df, ["index", "partition", "offset"], replaced_reads=_one_count(replaced))


def _mode_at(t: SparkTables, sends: Any, cols: list[str]) -> Any:
    """`sends` (keyed by `cols`, placed by topic and partition) with the latest mode of that
    partition before each was invoked, as struct `m` (mode_index, mode); sends under no mode left out."""
    F = t.F
    m = t.modes.select("topic", "partition", F.col("index").alias("mode_index"), "mode")
    return (sends.join(m, ["topic", "partition"]).filter(F.col("mode_index") < F.col("index"))
            .groupBy(*cols).agg(F.max(F.struct("mode_index", "mode")).alias("m")))


def write_to_readonly(t: SparkTables) -> Plan:
    from pyspark.sql import Window
    F = t.F
    df = (_mode_at(t, t.acked, _SEND_COLS).filter(F.col("m.mode").isin(*READONLY_MODES))
          .select(*_SEND_COLS, F.col("m.mode").alias("mode"), F.col("m.mode_index").alias("mode_index")))
    # each send placed on the partition its key was last acknowledged on, before it (local/checks.py)
    earlier = Window.partitionBy("topic", "key").orderBy("index").rowsBetween(Window.unboundedPreceding, -1)
    homed = (t.sends.filter(F.col("key").isNotNull())
             .select("topic", "key", "index",
                     F.last(F.when(F.col("status") == "ok", F.col("partition")), ignorenulls=True)
                     .over(earlier).alias("partition"))
             .filter(F.col("partition").isNotNull()))
    displaced = _mode_at(t, homed, ["topic", "key", "index"]).filter(F.col("m.mode").isin(*READONLY_MODES))
    return _found(df, ["index"], displaced_sends=_one_count(displaced))


def coordinator_split(t: SparkTables) -> Plan:
    F = t.F
    groups = t.coordinators.groupBy("group").agg(F.array_sort(F.collect_set("partition")).alias("partitions"))
    return _found(groups.filter(F.size("partitions") > 1), ["group"], groups=_one_count(groups),
                  answers=_one_count(t.coordinators))
