"""Our history as a Jepsen Kafka history.edn (`chaoskit export --to jepsen-kafka`), which
history/jepsen_kafka.py reads back to the ops the checks read the same way.

The first line is the header op (process `:chaoskit`, f `:chaoskit-export`) holding the key map: a
(topic, partition) read from a Jepsen key keeps that key (`t0`/1 is 1, `:x`/0 is :x), and every other,
sorted, takes the next integer no such key holds (0, 1, 2, ...). A send is one `:send` op of one
micro-op `[:send k v]` whose key is its partition's (an invoke's partition is its completion's; a
send whose partition was never known has a key of partition nil); `ok` completes it as `[:send k
[offset v]]`, a `fail`/`info` with an offset too, else as invoked. An `ok` poll is one `:poll` op of
`[:poll {k [[offset v] ...]}]`, one micro-op per run of records of one partition when its
partitions interleave (so the records keep their order), and so is a failed or indeterminate poll
that returned records; other polls are `[[:poll]]`. Every
micro-op value is an EDN string holding the value's canonical JSON (schema.value_text): Jepsen takes
a vector in a send for an [offset value] pair, and ours are often lists. Every other op keeps its
`f` and its value as EDN. Columns not in the micro-ops (`key`, `error`, `topic`, `leader_epoch`,
`node`, extras) stay on the op map under their own names; `time_ns` is Jepsen's `:time`.
Poll records' message keys and leader epochs are not written (no check reads them).
"""
from __future__ import annotations

import re
from itertools import count
from pathlib import Path
from typing import Any, Iterable, Iterator

from chaoskit.history.edn import Keyword, dumps, hashable
from chaoskit.history.jepsen_kafka import EXPORT_F, EXPORT_PROCESS, JSON_TEXT, TopicPartition, key_of
from chaoskit.history.schema import Op, value_text

_KEYWORD = re.compile(r"[A-Za-z_*!?][\w*!?<>=.+-]*$")
_IN_MICRO_OPS = {"send": ("value", "partition", "offset"), "poll": ("value",)}
_ON_EVERY_OP = ("index", "time_ns", "process", "type", "f")


def _name(text: Any) -> Any:
    """A name as Jepsen writes it: a keyword when it can be one."""
    return Keyword(text) if isinstance(text, str) and _KEYWORD.match(text) else text


def _send_partitions(ops: list[Op]) -> dict[tuple[Any, str | None], int]:
    """(process, value text) -> the partition a send's completion named: where its invoke went."""
    return {(op.get("process"), value_text(op.get("value"))): op["partition"] for op in ops
            if op.get("f") == "send" and op.get("type") != "invoke" and op.get("partition") is not None}


def _topic_partitions(ops: list[Op], partitions: dict[tuple[Any, str | None], int]) -> list[TopicPartition]:
    seen: set[TopicPartition] = set()
    for op in ops:
        if op.get("f") == "send":
            seen.add((op.get("topic"), _partition(op, partitions)))
        elif op.get("f") == "poll" and op.get("type") == "ok":
            seen.update((op.get("topic"), r[0]) for r in op.get("value") or [])
    return sorted(seen, key=lambda tp: (str(tp[0]), tp[1] is None, tp[1] or 0))


def _partition(op: Op, partitions: dict[tuple[Any, str | None], int]) -> int | None:
    if op.get("partition") is not None:
        return op["partition"]
    return partitions.get((op.get("process"), value_text(op.get("value"))))


def _keys(tps: list[TopicPartition]) -> dict[TopicPartition, Any]:
    """Each topic-partition's key: the Jepsen key it was read from, when it was (`t0`/1 is 1, `:x`/0
    is :x), else the next integer no such key holds."""
    keys = {tp: k for tp in tps if (k := key_of(tp)) is not None}
    taken = {k for k in keys.values() if isinstance(k, int)}
    free = (n for n in count() if n not in taken)
    return {tp: keys[tp] if tp in keys else next(free) for tp in tps}


def jepsen_kafka_lines(ops: Iterable[Op]) -> Iterator[str]:
    """The EDN lines of a Jepsen Kafka history for `ops`: the header, then one op map per op."""
    ops = sorted(ops, key=lambda op: op["index"])
    partitions = _send_partitions(ops)
    keys = _keys(_topic_partitions(ops, partitions))
    header = {Keyword("process"): Keyword(EXPORT_PROCESS), Keyword("type"): Keyword("info"),
              Keyword("f"): Keyword(EXPORT_F),
              Keyword("value"): {Keyword("keys"): {hashable(k): list(tp) for tp, k in keys.items()},
                                 Keyword("values"): Keyword(JSON_TEXT)}}
    yield dumps(header)
    for op in ops:
        yield dumps(_jepsen_op(op, keys, partitions))


def _jepsen_op(op: Op, keys: dict[TopicPartition, Any], partitions: dict[tuple[Any, str | None], int]) -> dict:
    f, kind = op["f"], op["type"]
    m: dict[Any, Any] = {Keyword("index"): op["index"]}
    if op.get("time_ns") is not None:
        m[Keyword("time")] = op["time_ns"]
    m |= {Keyword("type"): Keyword(kind), Keyword("process"): _name(op.get("process")), Keyword("f"): _name(f)}
    if f == "send":
        value = value_text(op.get("value"))
        done = op.get("offset") is not None or kind == "ok"
        m[Keyword("value")] = [[Keyword("send"), keys[(op.get("topic"), _partition(op, partitions))],
                                [op.get("offset"), value] if done and kind != "invoke" else value]]
    elif f == "poll":
        # a failed or indeterminate poll keeps the records it returned, if any (they show the log)
        m[Keyword("value")] = _poll_micro_ops(op, keys) if kind == "ok" or op.get("value") else [[Keyword("poll")]]
    else:
        m[Keyword("value")] = op.get("value")
    encoded = (*_ON_EVERY_OP, *_IN_MICRO_OPS.get(f, ("value",)))
    m |= {_name(k): v for k, v in op.items() if k not in encoded and v is not None}
    return m


def _poll_micro_ops(op: Op, keys: dict[TopicPartition, Any]) -> list[list[Any]]:
    runs: list[tuple[Any, list[list[Any]]]] = []  # (key, [[offset value] ...]) of consecutive records
    for partition, offset, _key, value, _epoch in op.get("value") or []:
        key = hashable(keys[(op.get("topic"), partition)])  # a vector or map key, as a map key
        if not runs or runs[-1][0] != key:
            runs.append((key, []))
        runs[-1][1].append([offset, value_text(value)])
    if len({k for k, _ in runs}) == len(runs):
        return [[Keyword("poll"), dict(runs)]]
    return [[Keyword("poll"), {k: pairs}] for k, pairs in runs]


def write_jepsen_kafka(ops: Iterable[Op], path: str | Path) -> Path:
    path = Path(path)
    with open(path, "w", encoding="utf-8") as f:
        for line in jepsen_kafka_lines(ops):
            f.write(line + "\n")
    return path
