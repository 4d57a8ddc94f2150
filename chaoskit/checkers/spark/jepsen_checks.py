"""Jepsen's Kafka anomalies as Spark plans: the rules of checkers/local/jepsen_checks.py (the
reference, which says what each means), over spark/tables.py's tables and its ops frame.

Ops read from Jepsen carry `jepsen_op` (which Jepsen op, i.e. transaction, they came from) and
`jepsen_f` in the Parquet history's `extra` JSON; without them an op is its own transaction.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chaoskit.checkers import cycles
from chaoskit.checkers.findings import Found
from chaoskit.checkers.spark.checks import Plan, _found, _one_count
from chaoskit.checkers.spark.incarnations import renamed
from chaoskit.checkers.spark.tables import SparkTables
from chaoskit.history.schema import process_of

TPV = ["topic", "partition", "value"]
_STEP_ORDER = ["index", "partition", "to_offset"]


def _cached(t: SparkTables, name: str, make: Any) -> Any:
    """A frame several plans read, built once per tables and kept until release()."""
    return t.shared(name, lambda _t: make())


def _groups(t: SparkTables) -> Any:
    """(index, group, jf): each op's Jepsen op (its own index without one) and Jepsen f."""
    F = t.F
    return t.ops.select("index", F.coalesce(F.get_json_object("extra", "$.jepsen_op").cast("long"),
                                            F.col("index")).alias("group"),
                        F.get_json_object("extra", "$.jepsen_f").alias("jf"))


def _sends(t: SparkTables) -> Any:
    """t.sends with `group` (its completion's) and `committed` (ok, or info with some send of its
    transaction read on its key)."""
    def make() -> Any:
        F = t.F
        g = _groups(t).select(F.col("index").alias("done_index"), "group")
        sends = t.sends.join(g, ["done_index"], "left")
        proven = (sends.filter(F.col("status") == "info").join(_read(t), TPV, "left_semi")
                  .select("group").distinct().withColumn("proven", F.lit(True)))
        return (sends.join(proven, ["group"], "left")
                .withColumn("committed", (F.col("status") == "ok")
                            | ((F.col("status") == "info") & F.coalesce(F.col("proven"), F.lit(False))))
                .drop("proven"))
    return _cached(t, "sends", make)


def _deliveries(t: SparkTables) -> Any:
    return _cached(t, "deliveries", lambda: t.deliveries.join(_groups(t).select("index", "group"), ["index"]))


def _read(t: SparkTables) -> Any:
    F = t.F
    return t.deliveries.filter(F.col("value").isNotNull()).select(*TPV).distinct()


def _log(t: SparkTables) -> Any:
    """(topic, partition, offset, value, place): the version order, `place` an offset's dense number."""
    def make() -> Any:
        from pyspark.sql import Window
        F = t.F
        sent = _sends(t).filter(F.col("committed") & F.col("offset").isNotNull() & F.col("value").isNotNull())
        reads = t.deliveries.unionByName(t.failed_reads)  # a failed poll's records show what the log held too
        log = (sent.select("topic", "partition", "offset", "value")
               .unionByName(reads.filter(F.col("value").isNotNull()).select("topic", "partition", "offset", "value"))
               .distinct())
        w = Window.partitionBy("topic", "partition").orderBy("offset")
        return log.withColumn("place", F.dense_rank().over(w) - 1)
    return _cached(t, "log", make)


def _places(t: SparkTables) -> Any:
    """(topic, partition, value, first, last): a value's first and last place; the last is its place."""
    F = t.F
    return _cached(t, "places", lambda: _log(t).groupBy(*TPV).agg(F.min("place").alias("first"),
                                                                   F.max("place").alias("last")))


def _offset_at(t: SparkTables, place: str, offset: str) -> Any:
    F = t.F
    return _log(t).select("topic", "partition", F.col("place").alias(place), F.col("offset").alias(offset)).distinct()


_SEND_COLS = ["process", "key", "value", "topic", "partition", "offset", "index"]


def lost_write(t: SparkTables) -> Plan:
    from pyspark.sql import Window
    F = t.F
    read = _read(t)
    bound = read.join(_places(t), TPV).groupBy("topic", "partition").agg(F.max("first").alias("bound"))
    must = (_places(t).join(bound, ["topic", "partition"]).filter(F.col("last") <= F.col("bound"))
            .join(read, TPV, "left_anti"))
    last_writer = Window.partitionBy(*TPV).orderBy(F.col("done_index").desc())
    writers = (_sends(t).filter(F.col("status").isNotNull())
               .withColumn("_n", F.row_number().over(last_writer)).filter((F.col("_n") == 1) & F.col("committed"))
               .drop("offset"))
    df = (must.join(writers, TPV).join(_offset_at(t, "first", "offset"), ["topic", "partition", "first"])
          .join(_offset_at(t, "bound", "max_read"), ["topic", "partition", "bound"])
          .select(*_SEND_COLS, "max_read"))
    committed = _sends(t).filter(F.col("committed"))
    return _found(df, ["index"], acked=_one_count(committed),
                  acked_read=_one_count(committed.join(read, TPV, "left_semi")))


def unseen(t: SparkTables) -> Plan:
    F = t.F
    ok = t.sends.filter(F.col("status") == "ok")
    return _found(ok.join(_read(t), TPV, "left_anti").select(*_SEND_COLS), ["index"], acked=_one_count(ok))


def duplicate(t: SparkTables) -> Plan:
    F = t.F
    values = _log(t).groupBy(*TPV).agg(F.array_sort(F.collect_set("offset")).alias("offsets"))
    df = values.withColumn("count", F.size("offsets")).filter(F.col("count") > 1)
    return _found(df, ["value", "topic", "partition"], post=_positions, values=_one_count(values))


def _positions(row: dict) -> None:
    row["positions"] = [[row["topic"], row["partition"], o] for o in row.pop("offsets")]


def inconsistent_offsets(t: SparkTables) -> Plan:
    F = t.F
    offsets = _log(t).groupBy("topic", "partition", "offset").agg(F.array_sort(F.collect_set("value")).alias("values"))
    return _found(offsets.filter(F.size("values") > 1), ["topic", "partition", "offset"], offsets=_one_count(offsets))


def _assigns(t: SparkTables) -> Any:
    """(process, index, group, rebalance, named): ok/info on_partitions_assigned ops, `rebalance`
    unless a Jepsen :assign/:subscribe gave it, `named` the (topic, partition)s it names."""
    def make() -> Any:
        F = t.F
        tps = F.coalesce(F.from_json("value", "array<array<string>>"), F.array())
        def named_tp(x: Any) -> Any:
            topic = F.coalesce(x[0], F.lit(""))
            return F.struct(topic.alias("topic"),
                            renamed(t.made, topic, x[1].cast("bigint"), F.col("index")).alias("partition"))

        named = F.transform(F.filter(tps, lambda x: F.size(x) == 2), named_tp)
        return (t.ops.filter((F.col("f") == "on_partitions_assigned") & F.col("type").isin("ok", "info"))
                .join(_groups(t), ["index"])
                .select("process", "index", "group", (~F.coalesce(F.col("jf").isin("assign", "subscribe"),
                                                                   F.lit(False))).alias("rebalance"),
                        named.alias("named")))
    return _cached(t, "assigns", make)


def _pairs(t: SparkTables, items: Any, within: bool, at: list[str], excused: Any = None) -> Any:
    """(process, topic, partition, index, v1, v2): the pairs of local/jepsen_checks.py `_pairs`;
    `items` has process, topic, partition, group, value, index and the `at` columns ordering it."""
    from pyspark.sql import Window
    F = t.F
    if within:
        w = Window.partitionBy("group", "topic", "partition").orderBy(*at)
        pairs = (items.withColumn("v1", F.lag("value").over(w)).withColumn("_prev", F.lag(F.lit(1)).over(w))
                 .filter(F.col("_prev").isNotNull()))
        if excused is not None:
            pairs = pairs.join(excused, ["group", "topic", "partition"], "left_anti")
        return pairs.select("process", "topic", "partition", "index", "v1", F.col("value").alias("v2"))
    key = ["process", "topic", "partition"]
    point = F.struct(*at, "value", F.col("index").alias("_index"))
    w = Window.partitionBy(*key).orderBy("first")
    if "ok" in items.columns:  # only an ok op moves a process on; every op is judged (local `advances`)
        ops = items.groupBy(*key, "group").agg(F.min(point).alias("first"), F.max(point).alias("last"),
                                               F.max(F.col("ok").cast("int")).alias("ok"))
        prev = F.last(F.when(F.col("ok") == 1, F.col("last")), ignorenulls=True).over(
            w.rowsBetween(Window.unboundedPreceding, -1))
    else:
        ops = items.groupBy(*key, "group").agg(F.min(point).alias("first"), F.max(point).alias("last"))
        prev = F.lag("last").over(w)
    pairs = ops.withColumn("prev", prev).filter(F.col("prev").isNotNull())
    a = _assigns(t).filter(~F.col("rebalance")).select(F.col("process").alias("a_process"),
                                                        F.col("index").alias("a_index"), "named")
    dropped = ((F.col("a_process") == F.col("process")) & (F.col(f"prev.{at[0]}") < F.col("a_index"))
               & (F.col("a_index") < F.col(f"first.{at[0]}"))
               & ~F.array_contains("named", F.struct(F.col("topic"), F.col("partition"))))
    return (pairs.join(a, dropped, "left_anti")
            .select(*key, F.col("first._index").alias("index"), F.col("prev.value").alias("v1"),
                    F.col("first.value").alias("v2")))


def _steps(t: SparkTables, pairs: Any) -> Any:
    """The pairs whose values both have a place, with from/to offsets and `delta` of places."""
    F = t.F
    p1 = _places(t).select("topic", "partition", F.col("value").alias("v1"), F.col("last").alias("i1"))
    p2 = _places(t).select("topic", "partition", F.col("value").alias("v2"), F.col("last").alias("i2"))
    return (pairs.join(p1, ["topic", "partition", "v1"]).join(p2, ["topic", "partition", "v2"])
            .join(_offset_at(t, "i1", "from_offset"), ["topic", "partition", "i1"])
            .join(_offset_at(t, "i2", "to_offset"), ["topic", "partition", "i2"])
            .withColumn("delta", F.col("i2") - F.col("i1")))


def _poll_steps(t: SparkTables, within: bool) -> Any:
    F = t.F
    excused = (_assigns(t).filter(F.col("rebalance")).select("group", F.explode("named").alias("tp"))
               .select("group", F.col("tp.topic").alias("topic"), F.col("tp.partition").alias("partition")).distinct())
    if within:
        pairs = _pairs(t, _deliveries(t), within, ["index", "pos"], excused)
    else:  # every completed poll judged, the ok ones alone moving a process on
        failed = t.failed_reads.join(_groups(t).select("index", "group"), ["index"])
        items = _deliveries(t).withColumn("ok", t.F.lit(True)).unionByName(failed.withColumn("ok", t.F.lit(False)))
        pairs = _pairs(t, items, within, ["index", "pos"])
    return _cached(t, f"poll_steps_{within}", lambda: _steps(t, pairs))


_STEP_COLS = ["process", "topic", "partition", "from_offset", "to_offset", "index"]


def _poll_plan(t: SparkTables, within: bool, skip: bool) -> Plan:
    F = t.F
    steps = _poll_steps(t, within)
    if skip:
        df = steps.filter(F.col("delta") > 1).select(*_STEP_COLS, (F.col("delta") - 1).alias("missed"))
    else:
        df = steps.filter(F.col("delta") < 1).select(*_STEP_COLS)
    if within:
        return _found(df, _STEP_ORDER, steps=_one_count(steps))
    # Jepsen allows these under subscribe: a consumer may be rebalanced between ops
    jf = F.get_json_object("extra", "$.jepsen_f")
    sub = t.ops.agg(F.max(F.when((F.col("f") == "subscribe") | (jf == "subscribe"), 1).otherwise(0)).alias("sub"))
    flagged = df.crossJoin(sub)
    return _found(flagged.filter(F.col("sub") == 0).drop("sub"), _STEP_ORDER, steps=_one_count(steps),
                  allowed=_one_count(flagged.filter(F.col("sub") == 1)))


def poll_skip(t: SparkTables) -> Plan:
    return _poll_plan(t, within=False, skip=True)


def nonmonotonic_poll(t: SparkTables) -> Plan:
    return _poll_plan(t, within=False, skip=False)


def int_poll_skip(t: SparkTables) -> Plan:
    return _poll_plan(t, within=True, skip=True)


def int_nonmonotonic_poll(t: SparkTables) -> Plan:
    return _poll_plan(t, within=True, skip=False)


def _send_steps(t: SparkTables, within: bool) -> Any:
    kinds = ("ok", "info", "fail") if within else ("ok", "info")
    return _steps(t, _pairs(t, _sends(t).filter(t.F.col("status").isin(*kinds)), within, ["done_index"]))


def _send_plan(t: SparkTables, within: bool) -> Plan:
    steps = _send_steps(t, within)
    return _found(steps.filter(t.F.col("delta") < 1).select(*_STEP_COLS), ["index", "partition"],
                  send_pairs=_one_count(steps))


def nonmonotonic_send(t: SparkTables) -> Plan:
    return _send_plan(t, within=False)


def int_nonmonotonic_send(t: SparkTables) -> Plan:
    return _send_plan(t, within=True)


def int_send_skip(t: SparkTables) -> Plan:
    """Counted as allowed, as Jepsen always allows it (local/jepsen_checks.py)."""
    F = t.F
    steps = _send_steps(t, within=True)
    return _found(steps.filter(F.lit(False)).select(*_STEP_COLS), ["index", "partition"], send_pairs=_one_count(steps),
                  allowed=_one_count(steps.filter(F.col("delta") > 1)))


def G1a(t: SparkTables) -> Plan:  # noqa: N802 -- Jepsen's name
    F = t.F
    failed = t.sends.filter(F.col("status") == "fail").groupBy(*TPV).agg(F.max("index").alias("writer"))
    df = t.deliveries.join(failed, TPV).select("process", "topic", "partition", "offset", "value", "index", "writer")
    return _found(df, ["index", "partition", "offset"], failed_sends=_one_count(failed))


def precommitted_read(t: SparkTables) -> Plan:
    F = t.F
    sent = _sends(t).filter(F.col("status").isNotNull()).select("group", *TPV).distinct()
    d = _deliveries(t)
    first = (d.join(sent, ["group", *TPV], "left_semi").groupBy("group")
             .agg(F.min(F.struct(*TPV, "index", "pos", "process")).alias("m"))
             .select("m.process", "m.topic", "m.partition", "m.value", "m.index"))
    both = sent.select("group").distinct().join(d.select("group").distinct(), ["group"], "left_semi")
    return _found(first, ["index"], txns=_one_count(both))


# --- cycles (checkers/cycles.py): the ww and wr edges built here, the search in the driver ------------------
def _cycles(t: SparkTables) -> tuple[dict[str, list[list[Any]]], dict[Any, Any]]:
    with t._lock:  # the four checks are planned on two threads: the graph is built once
        if not hasattr(t, "_cycles"):
            F = t.F
            from pyspark.sql import Window
            g = _groups(t)
            rows = (t.ops.select("process", "type", "index")
                    .join(g.filter(F.col("jf").isin("send", "poll", "txn")).select("index", "group"), ["index"])
                    .select("process", "group", "index", "type").orderBy("index"))
            txns = cycles.txn_ops((process_of(p), group, index, kind) for p, group, index, kind in arrow_rows(rows))
            writer = (_sends(t).filter(F.col("status").isNotNull()).groupBy(*TPV)
                      .agg(F.max_by("group", "done_index").alias("src")))
            reads = t.deliveries.unionByName(t.failed_reads).join(g.select("index", "group"), ["index"])
            wr = (reads.filter(F.col("value").isNotNull()).select(*TPV, F.col("group").alias("dst"))
                  .join(writer, TPV).select("src", "dst", *TPV).distinct())
            by_place = _log(t).groupBy("topic", "partition", "place").agg(F.min("value").alias("v1"))
            nxt = by_place.withColumn("v2", F.lead("v1").over(Window.partitionBy("topic", "partition").orderBy("place")))
            w1 = writer.select("topic", "partition", F.col("value").alias("v1"), "src")
            w2 = writer.select("topic", "partition", F.col("value").alias("v2"), F.col("src").alias("dst"))
            ww = nxt.filter(F.col("v2").isNotNull()).join(w1, ["topic", "partition", "v1"]) \
                .join(w2, ["topic", "partition", "v2"]).select("src", "dst", "topic", "partition", "v1", "v2")
            t._cycles = (cycles.cycles_of(txns, arrow_rows(wr), arrow_rows(ww)), txns)  # type: ignore[attr-defined]
        return t._cycles  # type: ignore[attr-defined]


def arrow_rows(df: Any) -> Iterator[tuple[Any, ...]]:
    """A DataFrame's rows as tuples, moved to the driver as Arrow columns: for the hundreds of
    thousands of rows a graph holds, far cheaper than collect()'s Row objects."""
    table = df.toArrow()
    return zip(*(table.column(i).to_pylist() for i in range(table.num_columns)))


def _cycle_found(t: SparkTables, name: str) -> Found:
    return cycles.found(name, *_cycles(t))


# named after the checks (catalog.py), as every check function of an engine
G0, G1c, G0_realtime, G1c_realtime = cycles.check_functions(_cycle_found)  # noqa: N816 -- Elle's names
