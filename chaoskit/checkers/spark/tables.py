"""The history as the DataFrames the Spark checks read: the tables of checkers/local/tables.py.

The Parquet history (history/parquet.py: a row per op and per record an ok poll delivered, in row
groups of one kind each) is not cached whole: the delivered records (read by every pass over
offsets, steps and first deliveries) and the few ops that are neither sends nor polls are cached,
the invokes and the completions are read from the file once each (each scan reads its kind's row
groups only: the filters below skip the rest by their statistics), into the table of sends with
their completion and their value's first delivery; that table, what each offset was seen holding
(as fingerprints of the values: 64-bit hashes, see `fingerprint`), and, through `shared`,
consumers' steps are cached once, until `release()`.
Nothing is exploded or parsed from JSON on the hot path: records come exploded from the file, and
only the rare ops whose value is structured (modes, coordinators, committed offsets, key callbacks) are
parsed.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from chaoskit.checkers.local.tables import RESETS
from chaoskit.checkers.spark.incarnations import renamed, replayed_from
from chaoskit.history.schema import KEY_ASSIGNED, KEY_REVOKED

# the columns of the Parquet history the checks read (the rest: time, node, epochs stay on disk)
_READ = ("index", "time_ns", "process", "type", "f", "value", "error", "topic", "partition", "key", "offset",
         "extra", "pos")


class SparkTables:
    def __init__(self, rows: Any) -> None:
        from pyspark.sql import functions as F

        self.F = F
        self._kept: list[Any] = []
        self._shared: dict[str, Any] = {}
        self._lock = threading.RLock()
        if "pos" not in rows.columns:
            raise ValueError("this Parquet history has its poll records nested (an older chaoskit wrote it): "
                             "check the history.jsonl beside it, which writes a new Parquet copy")
        is_record = F.col("pos").isNotNull()
        # partitions removed and made again are other partitions (history/incarnations.py)
        self.made, self.gone = replayed_from(rows)
        topic = F.coalesce(F.col("topic"), F.lit(""))
        rows = rows.select(*_READ).withColumns({
            "topic": topic, "partition": renamed(self.made, topic, F.col("partition"), F.col("index"))})
        # an ok poll's own value repeats its records: dropped
        self.ops = rows.filter(~is_record).drop("pos").withColumn(
            "value", F.when(F.col("f") == "poll", F.lit(None)).otherwise(F.col("value")))
        ops = self.ops
        record_cols = ("process", "index", "pos", "topic", "partition", "offset", "key", "value")
        delivered = F.col("type") == "ok"
        self.deliveries = self.kept(rows.filter(is_record & delivered).select(*record_cols))
        # what failed or indeterminate polls returned: not delivered, but the log held it (Jepsen's rules)
        self.failed_reads = rows.filter(is_record & ~delivered).select(*record_cols)
        # the ops neither sent nor polled (admin, callbacks, resets, the restore read): few, read by several checks
        self.rare = rare = self.kept(ops.filter(~F.col("f").isin("send", "poll")).drop("extra"))
        # the invokes and the completions each shuffled once, by value (each filtered first: a
        # shuffle of every send op, shared, was pruned to each side's columns, so Spark shuffled it
        # twice, both kinds each time): the completions' aggregate, the join to the invokes and the
        # join to the first deliveries (also by value) then move no row again
        send_ops = ops.filter(F.col("f") == "send")
        invokes = send_ops.filter(F.col("type") == "invoke").repartition("value").select(
            "process", "value", "key", "topic", F.col("partition").alias("i_partition"), "index",
            F.col("time_ns").alias("invoke_ns"))
        # each (process, value, topic, partition)'s first completion (a Jepsen op may send one value to
        # several keys; the local engine pairs alike); min_by over fixed-width columns keeps it a hash
        # aggregate (a min of a struct holding text would sort every send)
        status = F.when(F.col("type") == "ok", 0).when(F.col("type") == "fail", 1).otherwise(2)
        done = (send_ops.filter(F.col("type") != "invoke").repartition("value")
                .groupBy("process", "value", F.coalesce("topic", F.lit("")).alias("d_topic"), "partition")
                .agg(F.min_by(status, "index").alias("status"), F.min_by("offset", "index").alias("offset"),
                     F.min("index").alias("done_index"), F.min_by("time_ns", "index").alias("done_ns"))
                .withColumn("status", F.element_at(F.array(*map(F.lit, ("ok", "fail", "info"))), F.col("status") + 1))
                .withColumnsRenamed({"process": "d_process", "value": "d_value"}))
        paired = (F.col("process") == F.col("d_process")) & (F.coalesce("topic", F.lit("")) == F.col("d_topic")) & (
            F.col("i_partition").isNull() | (F.col("i_partition") == F.col("partition")))
        sends = invokes.join(done.hint("shuffle_hash"), (F.col("value") == F.col("d_value")) & _residual(paired),
                             "left").drop("d_process", "d_value", "d_topic", "i_partition")
        # each value's first delivery: what key-order orders by, and which acked values were read
        first = _first_deliveries(self.deliveries, self.kept)
        # the sends with their value's first delivery (null: never delivered), joined once for both uses
        self.sends_first = self.kept(sends.join(first.hint("shuffle_hash"), ["value"], "left"))
        self.sends = self.sends_first.drop("first")
        self.is_acked = (F.col("status") == "ok") & F.col("offset").isNotNull()
        self.acked = self.sends.filter(self.is_acked)
        self.resets = rare.filter(F.col("f").isin(*RESETS) & F.col("type").isin("ok", "info")) \
            .select("process", "index")
        self.truncations = rare.filter((F.col("f") == "truncation-detected") & F.col("type").isin("ok", "info")
                                      & F.col("offset").isNotNull()) \
            .select("process", "topic", "partition", "offset", "index")
        self.modes = rare.filter((F.col("f") == "partition-mode") & (F.col("type") == "ok")) \
            .select("topic", "partition", "index", F.from_json("value", "struct<mode:string>").mode.alias("mode")) \
            .filter(F.col("mode").isNotNull())
        coord = F.from_json("value", "struct<group:string,partition:bigint>")
        self.coordinators = rare.filter((F.col("f") == "coordinator") & (F.col("type") == "ok")) \
            .select(coord.group.alias("group"), coord.partition.alias("partition"), "index") \
            .filter(F.col("group").isNotNull() & F.col("partition").isNotNull())
        # one row per partition a `committed` op read: the group's committed offset there (-1: none)
        read = F.from_json("value", "struct<group:string,offsets:array<array<bigint>>>")
        self.committed = (
            rare.filter((F.col("f") == "committed") & (F.col("type") == "ok"))
            .select("topic", "index", read.group.alias("group"), F.explode(read.offsets).alias("po"))
            .filter(F.size("po") == 2)
            .select("group", "topic", "index", F.col("po")[0].alias("partition"), F.col("po")[1].alias("offset"))
            .withColumn("partition", renamed(self.made, F.col("topic"), F.col("partition"), F.col("index"))))
        # one row per (key callback, [topic, partition] it names); value is JSON text, partitions read as text
        tp = F.explode(F.from_json("value", "array<array<string>>")).alias("tp")
        self.key_callbacks = (
            rare.filter(F.col("f").isin(KEY_REVOKED, KEY_ASSIGNED) & (F.col("type") == "ok"))
            .select("f", "index", tp).filter(F.size("tp") == 2)
            .select("f", "index", F.try_element_at("tp", F.lit(1)).alias("topic"),
                    F.try_element_at("tp", F.lit(2)).try_cast("bigint").alias("partition"))
            .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull())
            .withColumn("partition", renamed(self.made, F.col("topic"), F.col("partition"), F.col("index"))))
        self.observations = (self.acked.select("topic", "partition", "offset", "value", F.col("done_index").alias("index"))
                             .unionByName(self.deliveries.select("topic", "partition", "offset", "value", "index")))
        # each observed offset, by hash aggregates only (text in an aggregate's buffer sorts every
        # row): its values' fingerprints, lowest and highest (they differ: two values were seen
        # there; null: none), and its last value's (by index); values_at() gives the values
        # themselves for the few offsets a check reports
        # (two values at one offset share a fingerprint with odds of 2**-64: one tells them apart)
        last = F.when(F.col("value").isNotNull(), F.col("index"))
        # the observations with their values' fingerprints: offsets aggregate them, duplicate names values by them
        self.fingerprinted = self.observations.withColumns({"h": fingerprint(1), "h2": fingerprint(2)})
        self.offsets = self.kept(self.fingerprinted
                                 .groupBy("topic", "partition", "offset")
                                 .agg(F.min("h").alias("h_min"), F.max("h").alias("h_max"),
                                      F.max_by("h", last).alias("last_h"), F.max_by("h2", last).alias("last_h2")))

    def values_at(self, offsets: Any) -> Any:
        """`offsets` (few rows, keyed by topic, partition, offset) with `values`: the values seen there, sorted."""
        F = self.F
        keys = ["topic", "partition", "offset"]
        return (self.observations.filter(F.col("value").isNotNull()).join(F.broadcast(offsets.select(*keys)), keys)
                .groupBy(*keys).agg(F.array_sort(F.collect_set("value")).alias("values")))

    def shared(self, name: str, build: Callable[[SparkTables], Any]) -> Any:
        """The table `build(self)` makes, built and cached once for every check that reads it."""
        with self._lock:  # checks are planned on several threads (spark/checks.py `evaluate`)
            if name not in self._shared:
                self._shared[name] = self.kept(build(self))
            return self._shared[name]

    def kept(self, df: Any) -> Any:
        """`df` cached until release(): a table that a plan reads more than once."""
        self._kept.append(df.cache())
        return df

    def release(self) -> None:
        for df in self._kept:
            df.unpersist()



def _residual(condition: Any) -> Any:
    """`condition` as a join's residual test, not one of its keys: a join keyed on fewer columns
    keeps the partitioning its inputs already have (Spark shuffles again for a key set that is not
    exactly theirs, spark.sql.requireAllClusterKeysForCoPartition)."""
    from pyspark.sql import functions as F

    return F.coalesce(condition, F.lit(False))


def fingerprint(seed: int) -> Any:
    """A value's 64-bit fingerprint (xxhash64, one of two seeds; null for a null value). Two together
    stand for a value in an aggregate: a false match needs both to collide, about 2**-128 a pair."""
    from pyspark.sql import functions as F

    return F.when(F.col("value").isNotNull(), F.xxhash64(F.lit(seed), F.col("value")))


POS_BITS = 20  # a poll delivers fewer than 2**20 records; index * 2**20 + pos orders deliveries in a long


def _first_deliveries(deliveries: Any, kept: Callable[[Any], Any]) -> Any:
    """(value, first: struct of index, pos, topic, partition) of each delivered value's first delivery.
    Hash aggregates only (a min of anything holding text sorts every row): (index, pos) packed in one
    long, the partition and the topic's number among the (few, cached) topics taken by it."""
    from pyspark.sql import functions as F

    topics = kept(deliveries.select("topic").distinct().withColumn("topic_id", F.monotonically_increasing_id()))
    at = F.shiftleft(F.col("index"), POS_BITS) + F.col("pos")
    first = (deliveries.join(F.broadcast(topics), ["topic"]).groupBy("value")
             .agg(F.min(at).alias("at"), F.min_by("partition", at).alias("partition"),
                  F.min_by("topic_id", at).alias("topic_id"))
             .join(F.broadcast(topics), ["topic_id"]))
    return first.select("value", F.struct(F.shiftright("at", POS_BITS).alias("index"),
                                          F.col("at").bitwiseAND((1 << POS_BITS) - 1).alias("pos"),
                                          "topic", "partition").alias("first"))
