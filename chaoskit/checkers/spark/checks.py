"""The checks as Spark jobs over the Parquet history (engine "spark"): the logic of local/checks.py.

Each check is a few joins, hash aggregates and partitioned windows over the tables of
spark/tables.py, planned as a `Plan` (its anomaly rows and their order), and `evaluate` runs a job
per plan, giving each check's count and first rows in the same order as the local engine.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from chaoskit.checkers.catalog import MOVED_CHANCES, MOVED_MARGIN_NS, NOT_MOVED, OUT_OF_ORDER
from chaoskit.checkers.findings import Found, Row
from chaoskit.checkers.local.tables import READONLY_MODES
from chaoskit.checkers.result import MAX_WITNESSES as LIMIT
from chaoskit.checkers.spark.tables import SparkTables
from chaoskit.history.schema import KEY_ASSIGNED, KEY_REVOKED, process_of


@dataclass
class Plan:
    """One check as Spark will run it: its anomaly rows in `order`, extra counts, and a fix-up of
    each collected row. A count is a one-row DataFrame of a column `n` (its own branch of the job)
    in `counts`, or in `tallies` a condition on `df`'s rows, counted in the same pass as the
    anomalies. With `where`, `df` is the table the check judges and its anomalies are the rows
    `where` holds for."""

    df: Any
    order: list[str]
    counts: dict[str, Any] = field(default_factory=dict)
    post: Callable[[Row], None] | None = None
    where: Any = None
    columns: list[str] | None = None  # the anomaly rows' columns (default: all of df's)
    tallies: dict[str, Any] = field(default_factory=dict)


def _found(df: Any, order: list[str], post: Callable[[Row], None] | None = None, **counts: Any) -> Plan:
    return Plan(df, order, counts, post)


def _judged(df: Any, where: Any, columns: list[str], order: list[str], **tallies: Any) -> Plan:
    """The anomalies are `df`'s rows that `where` holds for; `tallies`, conditions on `df`'s rows,
    are counted beside them, in one pass (no aggregate of its own, no second scan of `df`)."""
    return Plan(df, order, where=where, columns=columns, tallies=tallies)


PROCESS_COLUMNS = {"process", "other"}  # witness columns naming a process (stored as text)
JOBS_AT_ONCE = 2  # measured at 1M events: one at a time 11.8-12.7 s, two 10.2-10.5 s, four 10.4-11.6 s


def evaluate(plans: dict[str, Callable[[], Plan]]) -> dict[str, Found | Exception]:
    """Every check's count, first rows and extra counts, or the error its plan or job raised: each
    check planned (`plans[name]()`) and run as one job (one union, one collect), JOBS_AT_ONCE at a
    time, so the driver plans one check while another's tasks run (planning is a JVM round trip and
    an analysis per DataFrame call, a third of the check set's time at 10k events; planned beside
    the jobs, the check set at 10k took 4.9-5.1 s against 5.6-5.9 s planned first). One job for
    everything was slower (its plan, shipped with every task, grew to megabytes). A failed check is
    run again alone by the caller (checkers/kafka.py), which logs the error: twice in CI, under four
    at once, a check reading a shared cached table failed, and its error was not kept. A plan's
    count and first rows are one aggregate over its rows (`min_by(row, order, k)`: each task keeps
    its k best), so they are computed once, and nothing sorts them all."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(JOBS_AT_ONCE, thread_name_prefix="chaoskit-check") as pool:
        running = {name: pool.submit(lambda plan=plan: _result(plan())) for name, plan in plans.items()}
    return {name: job.exception() or job.result() for name, job in running.items()}


def _result(plan: Plan | Found) -> Found:
    """A plan's Found, collected; a check that computed its Found in the driver (from tables it
    collected: the cycle search) gives it as it is."""
    return plan if isinstance(plan, Found) else _collect(plan)


def _collect(plan: Plan) -> Found:
    from pyspark.sql import functions as F

    # one pass over the anomaly rows gives their count and first rows (measured against a top-k
    # and a count apart, which computed the rows twice: the check set 25% faster at 1M events)
    row, key = F.struct(*map(F.col, plan.columns or plan.df.columns)), F.struct(*map(F.col, plan.order))
    n = F.count(F.lit(1))
    if plan.where is not None:  # min_by passes over rows whose order is null
        row, key, n = F.when(plan.where, row), F.when(plan.where, key), F.count_if(plan.where)
    union = plan.df.agg(F.lit("").alias("count"), n.alias("n"),
                        F.to_json(F.min_by(row, key, LIMIT), {"ignoreNullFields": "false"}).alias("rows"),
                        (F.to_json(F.struct(*(F.count_if(c).alias(name) for name, c in plan.tallies.items())))
                         if plan.tallies else F.lit(None).cast("string")).alias("tallies"))
    for count_name, cdf in plan.counts.items():
        union = union.union(cdf.select(F.lit(count_name).alias("count"), F.col("n").cast("long").alias("n"),
                                       F.lit(None).cast("string").alias("rows"),
                                       F.lit(None).cast("string").alias("tallies")))
    found = Found(0, [], {})
    for r in union.collect():
        if r["count"] != "":
            found.counts[r["count"]] = int(r["n"])
            continue
        found.count = int(r["n"])
        found.counts.update(json.loads(r["tallies"]) if r["tallies"] else {})
        for row in json.loads(r["rows"]) if r["rows"] else ():
            for column in PROCESS_COLUMNS & row.keys():
                row[column] = process_of(row[column])
            found.rows.append(row)
    found.rows.sort(key=lambda row: tuple(_ascending(row[c]) for c in plan.order))  # Spark's order: nulls first
    if plan.post is not None:
        for row in found.rows:
            plan.post(row)
    return found


def _ascending(v: Any) -> tuple[bool, Any]:
    return (v is not None, v)


def _one_count(df: Any) -> Any:
    from pyspark.sql import functions as F
    return df.agg(F.count(F.lit(1)).alias("n"))


_SEND_COLS = ["process", "key", "value", "topic", "partition", "offset", "index"]


def _acked_reads(t: SparkTables) -> Any:
    """Acknowledged sends with `read` (some poll delivered the value) and `max_read`, the highest
    offset of their partition delivered: the table both lost-write and unseen judge. Not cached: a
    filter of the cached sends costs less than caching its 3M rows again (10M events: 3 s less)."""
    F = t.F
    max_read = t.deliveries.groupBy("topic", "partition").agg(F.max("offset").alias("max_read"))
    first_fault = t.rare.filter((F.col("process") == "nemesis") & (F.col("f") == "start")) \
        .agg(F.min("index").alias("first_fault"))
    return (t.sends_first.filter(t.is_acked).select(*_SEND_COLS, "done_index", F.col("first").isNotNull().alias("read"))
            .join(F.broadcast(max_read), ["topic", "partition"], "left").crossJoin(F.broadcast(first_fault)))


def _never_read(t: SparkTables, lost: bool) -> Plan:
    """An acknowledged send no poll delivered: lost when its partition was read past its offset,
    unseen otherwise. Judged in one pass over the acknowledged sends, which are counted beside."""
    F = t.F
    read_past = F.coalesce(F.col("max_read") > F.col("offset"), F.lit(False))
    where = ~F.col("read") & (read_past if lost else ~read_past)
    columns = [*_SEND_COLS, "max_read"] if lost else _SEND_COLS
    return _judged(_acked_reads(t), where, columns, ["index"], acked=F.lit(True), acked_read=F.col("read"),
                   acked_after_fault=F.coalesce(F.col("done_index") > F.col("first_fault"), F.lit(False)))


def lost_write(t: SparkTables) -> Plan:
    return _never_read(t, lost=True)


def unseen(t: SparkTables) -> Plan:
    return _never_read(t, lost=False)


def duplicate(t: SparkTables) -> Plan:
    """One value at two places; each offset counts with the last value seen there, so a place a
    truncation replaced is not a copy (as in the local engine). Values are grouped by their
    fingerprints; only the few duplicated ones are looked up as text."""
    F = t.F
    fp = ["last_h", "last_h2"]
    last = t.offsets.filter(F.col("last_h").isNotNull())
    groups = last.groupBy(*fp).agg(F.count(F.lit(1)).alias("count"))
    twice = last.join(F.broadcast(groups.filter(F.col("count") > 1)), fp)
    named = t.fingerprinted.select("topic", "partition", "offset", "value", F.col("h").alias("last_h"),
                                   F.col("h2").alias("last_h2"))
    places = (named.join(F.broadcast(twice), ["topic", "partition", "offset", *fp])
              .groupBy("value").agg(F.collect_set(F.struct("topic", "partition", "offset")).alias("places"))
              .withColumn("count", F.size("places")))
    return _found(places, ["value"], post=_positions, values=_one_count(groups))


def _positions(row: Row) -> None:
    row["positions"] = sorted([p["topic"], p["partition"], p["offset"]] for p in row.pop("places"))


def inconsistent_offsets(t: SparkTables) -> Plan:
    F = t.F
    offsets = t.offsets.filter(F.col("h_min").isNotNull())
    return _found(t.values_at(_replaced_offsets(t)), ["topic", "partition", "offset"], offsets=_one_count(offsets))


def _replaced_offsets(t: SparkTables) -> Any:
    """(topic, partition, offset) seen holding two different values: a truncation replaced what was there."""
    F = t.F
    return t.offsets.filter(F.col("h_min") != F.col("h_max")).select("topic", "partition", "offset")


def steps(t: SparkTables) -> Any:
    """Each consumer's consecutive deliveries of a partition with no position reset between them:
    (process, topic, partition, from_offset, to_offset, index, pos), one sort of the deliveries."""
    from pyspark.sql import Window
    F = t.F
    w = Window.partitionBy("process", "topic", "partition").orderBy("index", "pos")
    pairs = (t.deliveries.select("process", "topic", "partition", "index", "pos",
                                 F.lag("offset").over(w).alias("from_offset"), F.col("offset").alias("to_offset"),
                                 F.lag("index").over(w).alias("from_index"))
             .filter(F.col("from_offset").isNotNull()))
    resets = t.resets.select(F.col("process").alias("r_process"), F.col("index").alias("r_index"))
    between = ((F.col("r_process") == F.col("process")) & (F.col("r_index") > F.col("from_index"))
               & (F.col("r_index") < F.col("index")))
    return pairs.join(F.broadcast(resets), between, "left_anti").drop("from_index")


_STEP_COLS = ["process", "topic", "partition", "from_offset", "to_offset", "index"]
_STEP_ORDER = ["index", "partition", "to_offset"]


def _step_count(t: SparkTables) -> Any:
    return _one_count(t.shared("steps", steps))


def poll_skip(t: SparkTables) -> Plan:
    """A step over offsets known to exist (observed): those strictly between its two offsets,
    counted for the steps that leave a gap (few: consecutive records have consecutive offsets)."""
    F = t.F
    gaps = t.shared("steps", steps).filter(F.col("to_offset") > F.col("from_offset") + 1)
    known = t.offsets.select(F.col("topic").alias("k_topic"), F.col("partition").alias("k_partition"),
                             F.col("offset").alias("k_offset"))
    inside = ((F.col("k_topic") == F.col("topic")) & (F.col("k_partition") == F.col("partition"))
              & (F.col("k_offset") > F.col("from_offset")) & (F.col("k_offset") < F.col("to_offset")))
    df = (known.join(F.broadcast(gaps), inside).groupBy(*_STEP_COLS, "pos").agg(F.count(F.lit(1)).alias("missed"))
          .select(*_STEP_COLS, "missed"))
    return _found(df, _STEP_ORDER, steps=_step_count(t))


def nonmonotonic_poll(t: SparkTables) -> Plan:
    """A step back over an offset a truncation replaced is KIP-320's re-read (local/checks.py says why)."""
    F = t.F
    back = t.shared("steps", steps).filter(F.col("to_offset") <= F.col("from_offset"))
    replaced = _replaced_offsets(t).select(F.col("topic").alias("r_topic"), F.col("partition").alias("r_partition"),
                                           F.col("offset").alias("r_offset"))
    over = ((F.col("r_topic") == F.col("topic")) & (F.col("r_partition") == F.col("partition"))
            & (F.col("r_offset") >= F.col("to_offset")) & (F.col("r_offset") <= F.col("from_offset")))
    return _found(back.join(F.broadcast(replaced), over, "left_anti").select(*_STEP_COLS), _STEP_ORDER,
                  steps=_step_count(t))


def nonmonotonic_send(t: SparkTables) -> Plan:
    """An acknowledged send at or below the offset of the producer's previous one on its partition;
    every such pair is counted beside, in the same pass."""
    from pyspark.sql import Window
    F = t.F
    w = Window.partitionBy("process", "topic", "partition").orderBy("index")
    pairs = (t.acked.select("process", "topic", "partition", "index", F.col("offset").alias("to_offset"),
                            F.lag("offset").over(w).alias("from_offset"))
             .filter(F.col("from_offset").isNotNull()))
    return _judged(pairs, F.col("to_offset") <= F.col("from_offset"),
                   ["process", "topic", "partition", "from_offset", "to_offset", "index"], ["index"],
                   send_pairs=F.lit(True))


def commit_regressed(t: SparkTables) -> Plan:
    """A group's committed offset of a partition read lower than the read before (-1: gone); its
    evidence, the pairs whose first read found a record's consumption committed (an offset above 0)."""
    from pyspark.sql import Window
    F = t.F
    w = Window.partitionBy("group", "topic", "partition").orderBy("index")
    pairs = (t.committed.select("group", "topic", "partition", "index", F.col("offset").alias("to_offset"),
                                F.lag("offset").over(w).alias("from_offset"), F.lag("index").over(w).alias("from_index"))
             .filter(F.col("from_offset") >= 0))
    return _judged(pairs, F.col("to_offset") < F.col("from_offset"),
                   ["group", "topic", "partition", "from_offset", "from_index", "to_offset", "index"],
                   ["index", "partition"], commit_pairs=F.col("from_offset") > 0)


def double_owner(t: SparkTables) -> Plan:
    """A member's delivery of a partition after another member's, which came after the first
    member's own earlier one, with no assignment of the first member between its two."""
    from pyspark.sql import Window
    F = t.F
    w = Window.partitionBy("topic", "partition").orderBy("index", "pos")
    own = Window.partitionBy("topic", "partition", "process").orderBy("index", "pos")
    steps = t.deliveries.select(
        "topic", "partition", "process", "index", "pos", "offset",
        F.lag("process").over(w).alias("other"), F.lag("index").over(w).alias("other_index"),
        F.lag("offset").over(w).alias("other_offset"), F.lag("index").over(own).alias("from_index"),
        F.lag("offset").over(own).alias("from_offset"))
    handover = F.col("other").isNotNull() & (F.col("other") != F.col("process"))
    suspect = handover & (F.col("from_index") < F.col("other_index"))
    assigns = (t.rare.filter((F.col("f") == "on_partitions_assigned") & F.col("type").isin("ok", "info"))
               .select(F.col("process").alias("a_process"), F.col("index").alias("a_index")))
    keys = ["topic", "partition", "process", "index", "pos"]
    excused = (steps.filter(suspect)
               .join(F.broadcast(assigns), (F.col("process") == F.col("a_process"))
                     & (F.col("a_index") > F.col("from_index")) & (F.col("a_index") < F.col("index")), "left_semi")
               .select(*keys, F.lit(True).alias("excused")))
    judged = steps.join(excused, keys, "left")
    return _judged(judged, suspect & F.col("excused").isNull(),
                   ["topic", "partition", "process", "from_offset", "from_index", "other", "other_offset",
                    "other_index", "offset", "index"], ["index", "partition"], handovers=handover)


def _pairs_count(t: SparkTables, rows: Any, by: list[str]) -> Any:
    """How many rows of `rows` follow another of the same `by` (each but the first of its group):
    a window's pairs counted by a hash aggregate, without the window's sort."""
    F = t.F
    return rows.groupBy(*by).count().agg(F.coalesce(F.sum("count") - F.count(F.lit(1)), F.lit(0)).alias("n"))


def key_order(t: SparkTables) -> Plan:
    from pyspark.sql import Window
    F = t.F
    sends = t.sends_first.filter(F.col("key").isNotNull() & F.col("first").isNotNull())
    w = Window.partitionBy("process", "key").orderBy("index")
    pairs = (sends.select("process", "key", "index", "partition", "value", "first",
                          F.lag("value").over(w).alias("prev_value"), F.lag("partition").over(w).alias("prev_partition"),
                          F.lag("first").over(w).alias("prev_first"))
             .filter(F.col("prev_first").isNotNull()))
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
    unmoved = cross.filter(~_removed_between(t, a, b)).join(moved, ["index"], "left_anti")
    df = rows(pairs.filter(out_of_order), F.lit(OUT_OF_ORDER)).unionByName(
        rows(unmoved, F.format_string(NOT_MOVED, a.partition, b.partition)))
    return _found(df, ["index"], key_pairs=_pairs_count(t, sends, ["process", "key"]),
                  moved_pairs=_one_count(pairs.filter(between_partitions)), cross_partition_pairs=_one_count(cross))


def _removed_between(t: SparkTables, a: Any, b: Any) -> Any:
    """A's partition removed between the two deliveries (local/checks.py)."""
    F = t.F
    gone = F.lit(False)
    for (topic, partition), at in t.gone.items():  # few: one per removal
        gone = gone | ((a.topic == topic) & (a.partition == partition) & (a.index < at) & (b.index > at))
    return gone


def _key_callbacks(t: SparkTables, f: str, name: str) -> Any:
    """(name_topic, name_partition, name): the `f` key callbacks, the index as `name`."""
    F = t.F
    return t.key_callbacks.filter(F.col("f") == f).select(F.col("topic").alias(f"{name}_topic"),
                                                          F.col("partition").alias(f"{name}_partition"),
                                                          F.col("index").alias(name))


def truncation_undetected(t: SparkTables) -> Plan:
    """Replaced reads (deliveries whose offset later held other content, the partition read again
    once it did) that nobody read again at or below their offset, and no truncation at or below it
    was reported, afterwards (local/checks.py).
    Only deliveries at replaced offsets (few) are joined; the rest of the history is only scanned."""
    F = t.F
    replaced = F.broadcast(_replaced_offsets(t))
    d = t.deliveries.join(replaced, ["topic", "partition", "offset"], "left_semi").alias("d")
    o = t.observations.join(replaced, ["topic", "partition", "offset"], "left_semi").alias("o")
    reads = t.kept(d.join(o, (F.col("d.topic") == F.col("o.topic")) & (F.col("d.partition") == F.col("o.partition"))
                          & (F.col("d.offset") == F.col("o.offset")) & (F.col("o.index") > F.col("d.index"))
                          & F.col("o.value").isNotNull() & ~F.col("o.value").eqNullSafe(F.col("d.value")))
                   .groupBy("d.process", "d.topic", "d.partition", "d.offset", "d.value", "d.index", "d.pos")
                   .agg(F.array_sort(F.collect_set("o.value")).alias("later"), F.min("o.index").alias("replaced_at"))
                   # judged only when the partition was read again once the replacement was seen
                   .join(t.deliveries.groupBy("topic", "partition").agg(F.max("index").alias("last_read")),
                         ["topic", "partition"])
                   .filter(F.col("last_read") > F.col("replaced_at")))
    # a later point of the partition (a read, or a truncation reported) at or below the offset: the
    # consumers went back over it; a later record of the same poll does not count (index >)
    points = (t.deliveries.select("topic", "partition", "index", "offset")
              .unionByName(t.truncations.select("topic", "partition", "index", "offset")))
    r = reads.select(F.col("topic").alias("r_topic"), F.col("partition").alias("r_partition"),
                     F.col("offset").alias("r_offset"), F.col("index").alias("r_index"), F.col("pos").alias("r_pos"))
    back = ((F.col("r_topic") == F.col("topic")) & (F.col("r_partition") == F.col("partition"))
            & (F.col("index") > F.col("r_index")) & (F.col("offset") <= F.col("r_offset")))
    judged = points.join(F.broadcast(r), back).select("r_topic", "r_partition", "r_offset", "r_index", "r_pos") \
        .distinct()
    met = ((F.col("r_topic") == F.col("topic")) & (F.col("r_partition") == F.col("partition"))
           & (F.col("r_offset") == F.col("offset")) & (F.col("r_index") == F.col("index")) & (F.col("r_pos") == F.col("pos")))
    df = reads.join(judged, met, "left_anti").select("process", "topic", "partition", "offset", "value", "index", "later")
    return _found(df, ["index", "partition", "offset"], replaced_reads=_one_count(reads))


def _mode_at(t: SparkTables, sends: Any, cols: list[str]) -> Any:
    """`sends` (keyed by `cols`, placed by topic and partition) with the latest mode of that
    partition before each was invoked, as struct `m` (mode_index, mode); sends under no mode left out.
    The latest mode's index is a hash aggregate, its mode joined back (a max of a struct holding
    text would sort every pair)."""
    F = t.F
    m = t.modes.select("topic", "partition", F.col("index").alias("mode_index"), "mode")
    keys = list(dict.fromkeys([*cols, "topic", "partition"]))
    latest = (sends.join(F.broadcast(m.drop("mode")), ["topic", "partition"])
              .filter(F.col("mode_index") < F.col("index")).groupBy(*keys).agg(F.max("mode_index").alias("mode_index")))
    return latest.join(F.broadcast(m), ["topic", "partition", "mode_index"]) \
        .select(*cols, F.struct("mode_index", "mode").alias("m"))


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


def moved_value_kept(t: SparkTables) -> Plan:
    F = t.F
    restored = t.rare.filter((F.col("f") == "restore") & (F.col("type") == "ok") & F.col("offset").isNotNull()) \
        .select("topic", "partition", "offset")
    acked = t.acked.filter(F.col("key").isNotNull() & F.col("invoke_ns").isNotNull() & F.col("done_ns").isNotNull())
    tp = ["topic", "partition"]
    top = restored.groupBy(*tp).agg(F.max("offset").alias("top"))
    # when compaction last showed on each partition: an acknowledged record below the restore read's
    # last offset there that it no longer found (local/checks.py)
    passed = (acked.join(F.broadcast(top), tp).filter(F.col("offset") < F.col("top"))
              .join(restored, [*tp, "offset"], "left_anti").groupBy(*tp).agg(F.max("invoke_ns").alias("until")))
    # each key's last send on each partition where compaction showed (fixed-width aggregates: a
    # hash aggregate; few rows: keys times partitions), then each later send of the key elsewhere
    # acknowledged in time is a chance, matched against that small table as the sends stream by
    last = (acked.groupBy("topic", "key", "partition")
            .agg(F.max("offset").alias("offset"), F.max_by("index", "offset").alias("index"),
                 F.max_by("done_index", "offset").alias("done_index"))
            .join(F.broadcast(passed), tp))
    w = acked.select("topic", "key", F.col("index").alias("w_index"), F.col("partition").alias("w_partition"),
                     F.col("done_ns").alias("w_done_ns"))
    chance = ((F.col("w_partition") != F.col("partition")) & (F.col("w_index") > F.col("done_index"))
              & (F.col("w_done_ns") + MOVED_MARGIN_NS <= F.col("until")))
    judged = (w.join(F.broadcast(last), ["topic", "key"]).filter(chance)
              .groupBy("topic", "key", "partition", "offset", "index")
              .agg(F.count(F.lit(1)).alias("writes"), F.min_by("w_partition", "w_index").alias("moved_to"))
              .filter(F.col("writes") >= MOVED_CHANCES))
    kept = (acked.select("topic", "key", "partition", "index", "process", "value")
            .join(F.broadcast(judged.join(restored, [*tp, "offset"], "left_semi")), ["topic", "key", "partition", "index"])
            .select("process", "key", "value", "topic", "partition", "offset", "index", "moved_to", "writes"))
    return _found(kept, ["index"], moved_keys=_one_count(judged))


def coordinator_split(t: SparkTables) -> Plan:
    F = t.F
    groups = t.coordinators.groupBy("group").agg(F.array_sort(F.collect_set("partition")).alias("partitions"))
    return _found(groups.filter(F.size("partitions") > 1), ["group"], groups=_one_count(groups),
                  answers=_one_count(t.coordinators))
