"""The history as the DataFrames the Spark checks read: the tables of checkers/local/tables.py.

Sends with their completion, exploded poll records, position resets (rebalance assigns and
truncation reports), key callbacks, truncation reports, partition modes and coordinator
observations, flattened from the ops DataFrame over the Parquet history; the few read by several
checks are cached until `release()`.
"""
from __future__ import annotations

from typing import Any

from chaoskit.checkers.local.tables import RESETS
from chaoskit.history.schema import KEY_ASSIGNED, KEY_REVOKED


class SparkTables:
    def __init__(self, ops: Any) -> None:
        from pyspark.sql import functions as F

        self.F = F
        self._kept: list[Any] = []
        ops = ops.withColumn("topic", F.coalesce(F.col("topic"), F.lit("")))
        is_send = F.col("f") == "send"
        invokes = ops.filter(is_send & (F.col("type") == "invoke")).select("process", "value", "key", "topic", "index")
        done = (ops.filter(is_send & (F.col("type") != "invoke"))
                .groupBy("process", "value")
                .agg(F.min(F.struct(F.col("index"), F.col("type").alias("status"), "partition", "offset")).alias("d"))
                .select("process", "value", F.col("d.status").alias("status"), F.col("d.partition").alias("partition"),
                        F.col("d.offset").alias("offset"), F.col("d.index").alias("done_index")))
        self.sends = invokes.join(done, ["process", "value"], "left").cache()
        self.acked = self.sends.filter((F.col("status") == "ok") & F.col("offset").isNotNull())
        polls = ops.filter((F.col("f") == "poll") & (F.col("type") == "ok") & F.col("records").isNotNull())
        self.deliveries = (polls.select("process", "index", "topic", F.posexplode("records").alias("pos", "r"))
                           .select("process", "index", "pos", "topic", F.col("r.partition").alias("partition"),
                                   F.col("r.offset").alias("offset"), F.col("r.key").alias("key"),
                                   F.col("r.value").alias("value"))).cache()
        self.resets = ops.filter(F.col("f").isin(*RESETS) & F.col("type").isin("ok", "info")) \
            .select("process", "index")
        self.truncations = ops.filter((F.col("f") == "truncation-detected") & F.col("type").isin("ok", "info")
                                      & F.col("offset").isNotNull()) \
            .select("process", "topic", "partition", "offset", "index")
        self.modes = ops.filter((F.col("f") == "partition-mode") & (F.col("type") == "ok")) \
            .select("topic", "partition", "index", F.from_json("value", "struct<mode:string>").mode.alias("mode")) \
            .filter(F.col("mode").isNotNull())
        coord = F.from_json("value", "struct<group:string,partition:bigint>")
        self.coordinators = ops.filter((F.col("f") == "coordinator") & (F.col("type") == "ok")) \
            .select(coord.group.alias("group"), coord.partition.alias("partition"), "index") \
            .filter(F.col("group").isNotNull() & F.col("partition").isNotNull())
        # one row per (key callback, [topic, partition] it names); value is JSON text, partitions read as text
        tp = F.explode(F.from_json("value", "array<array<string>>")).alias("tp")
        self.key_callbacks = (ops.filter(F.col("f").isin(KEY_REVOKED, KEY_ASSIGNED) & (F.col("type") == "ok"))
                              .select("f", "index", tp).filter(F.size("tp") == 2)
                              .select("f", "index", F.try_element_at("tp", F.lit(1)).alias("topic"),
                                      F.try_element_at("tp", F.lit(2)).try_cast("bigint").alias("partition"))
                              .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull())).cache()
        self.observations = (self.acked.select("topic", "partition", "offset", "value", F.col("done_index").alias("index"))
                             .unionByName(self.deliveries.select("topic", "partition", "offset", "value", "index"))
                             ).cache()
        self.ops = ops

    def kept(self, df: Any) -> Any:
        """`df` cached until release(): a small result that a plan reads more than once."""
        self._kept.append(df.cache())
        return df

    def release(self) -> None:
        for df in (self.sends, self.deliveries, self.observations, self.key_callbacks, *self._kept):
            df.unpersist()
