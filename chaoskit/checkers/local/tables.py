"""The history flattened into the tables the checks read, in one process (the local engine).

A missing topic is "" (so both engines join on it alike).

`checkers/spark/tables.py` builds the same tables as DataFrames; docs/history.md says how each op maps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from chaoskit.history.incarnations import Incarnations
from chaoskit.history.schema import KEY_ASSIGNED, KEY_REVOKED, Op, read_records, value_text

READONLY_MODES = ("ReadOnly", "None")
# ops after which a consumer may legitimately read a partition from another offset
RESETS = ("on_partitions_assigned", "truncation-detected")
TXN_FS = ("send", "poll", "txn")  # the Jepsen ops the cycle checks' graph is made of


@dataclass
class Send:
    process: Any
    value: str
    key: Any
    topic: Any
    index: int  # the invoke's index
    status: str | None = None  # ok | fail | info; None: never completed
    partition: int | None = None
    offset: int | None = None
    done_index: int | None = None
    group: int | None = None  # its completion's Jepsen op (jepsen_op), else the completion's index
    invoke_ns: int | None = None  # the invoke's time_ns
    done_ns: int | None = None  # the completion's time_ns


@dataclass
class Delivery:
    process: Any
    index: int  # the poll's index
    pos: int  # the record's place in the poll
    topic: Any
    partition: int
    offset: int
    key: Any
    value: str | None
    group: int = 0  # its poll's Jepsen op (jepsen_op), else the poll's index


@dataclass(frozen=True)
class Assign:
    """An ok/info on_partitions_assigned: from a Jepsen :assign/:subscribe (`rebalance` False) or
    any other (a rebalance: our callbacks, the entries of a Jepsen op's :rebalance-log)."""
    process: Any
    index: int
    group: int
    rebalance: bool
    partitions: frozenset  # the (topic, partition)s it names


@dataclass(frozen=True)
class Committed:
    """One partition of a `committed` op: the group's committed offset there as the broker answered
    it (-1: none)."""
    group: str
    topic: Any
    partition: int
    offset: int
    index: int


@dataclass
class Tables:
    sends: list[Send] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    # what failed or indeterminate polls returned: never delivered, but the log held it (Jepsen's rules)
    failed_reads: list[Delivery] = field(default_factory=list)
    # process -> indices of its position resets: rebalance assigns and truncation reports
    resets: dict[Any, list[int]] = field(default_factory=dict)
    truncations: list[tuple[Any, Any, int, int, int]] = field(default_factory=list)  # process, t, p, offset, index
    modes: list[tuple[Any, int, int, str]] = field(default_factory=list)  # topic, partition, index, mode
    coordinators: list[tuple[str, int, int]] = field(default_factory=list)  # group, partition, index
    committed: list[Committed] = field(default_factory=list)
    # (topic, partition) -> the offsets a restore read found there (run/restore.py)
    restored: dict[tuple[Any, int], set[int]] = field(default_factory=dict)
    # (topic, partition) -> indices (ascending) of the key callbacks naming it
    key_revoked: dict[tuple[Any, int], list[int]] = field(default_factory=dict)
    key_assigned: dict[tuple[Any, int], list[int]] = field(default_factory=dict)
    # (topic, partition) -> the first op its removal came before (history/incarnations.py)
    gone: dict[tuple[Any, int], int] = field(default_factory=dict)
    assigns: list[Assign] = field(default_factory=list)
    # (process, jepsen_op, index, type) of each op of a Jepsen send/poll/txn, in index order: the cycle
    # checks' vertices (checkers/cycles.py txn_ops)
    txn_rows: list[tuple[Any, Any, int, str]] = field(default_factory=list)
    first_fault: int | None = None  # the index of the first fault's start (a nemesis op), if any
    subscribed: bool = False  # some op subscribed (Jepsen's :subscribe): rebalances between ops are allowed
    jepsen: bool = False  # read from Jepsen's Kafka history: the checks of its names follow its rules

    def acked(self) -> list[Send]:
        return [s for s in self.sends if s.status == "ok" and s.offset is not None]


def _named(value: Any, made: Incarnations) -> frozenset:
    """The (topic, partition)s an assignment's value names ([[topic, partition], ...])."""
    if not isinstance(value, list):
        return frozenset()
    return frozenset((tp[0] or "", made.partition(tp[0] or "", tp[1])) for tp in value
                     if isinstance(tp, list) and len(tp) == 2)


def in_order(ops: Iterable[Op]) -> Iterable[Op]:
    """A list sorted by index if it is not already; an iterator (a stream too big to hold) is
    checked instead: it must come in index order, as the recorder writes it."""
    if isinstance(ops, list):
        if any(a["index"] > b["index"] for a, b in zip(ops, ops[1:])):
            return sorted(ops, key=lambda o: o["index"])
        return ops
    return _ordered_stream(ops)


def _ordered_stream(ops: Iterable[Op]) -> Iterable[Op]:
    last = -1
    for op in ops:
        if op["index"] < last:
            raise ValueError(f"a streamed history must come in index order: op {op['index']} after op {last}; "
                             "pass a list to have it sorted")
        last = op["index"]
        yield op


def group_of(op: Op) -> int:
    """Which Jepsen op (transaction) an op came from: its jepsen_op, else its own index."""
    return op["jepsen_op"] if op.get("jepsen_op") is not None else op["index"]


def build(ops: Iterable[Op]) -> Tables:
    t = Tables()
    pending: dict[tuple[Any, str | None, Any, int | None], Send] = {}
    made = Incarnations()  # a partition removed and made again is another partition (history/incarnations.py)
    named = made.partition
    for op in in_order(ops):
        f, kind, idx = op.get("f"), op.get("type"), op["index"]
        made.observe(op)  # rare: an admin op removing a partition, or making one again
        if op.get("jepsen_f") in TXN_FS:
            t.txn_rows.append((op.get("process"), op.get("jepsen_op"), idx, kind))
        t.subscribed = t.subscribed or f == "subscribe" or op.get("jepsen_f") == "subscribe"
        if f == "send":
            # an invoke and its completion: one process, one value, one topic, and the partition when the
            # invoke names one (a Jepsen op may send one value to several keys; ours name none)
            k = (op.get("process"), value_text(op.get("value")), op.get("topic") or "")
            if kind == "invoke":
                send = Send(k[0], k[1], op.get("key"), k[2], idx, invoke_ns=op.get("time_ns"))
                pending[(*k, op.get("partition"))] = send
                t.sends.append(send)
            elif (s := pending.get((*k, op.get("partition"))) or pending.get((*k, None))) is not None \
                    and s.status is None:
                s.status, s.partition, s.offset, s.done_index = kind, named(s.topic, op.get("partition")), \
                    op.get("offset"), idx
                s.group, s.done_ns = group_of(op), op.get("time_ns")
        elif f == "poll" and kind != "invoke":
            topic = op.get("topic") or ""
            into = t.deliveries if kind == "ok" else t.failed_reads
            for pos, (p, o, key, v, _epoch) in enumerate(read_records(op)):
                into.append(Delivery(op.get("process"), idx, pos, topic, named(topic, p), o, key, v, group_of(op)))
        elif f in RESETS and kind in ("ok", "info"):
            t.resets.setdefault(op.get("process"), []).append(idx)
            if f == RESETS[0]:
                t.assigns.append(Assign(op.get("process"), idx, group_of(op),
                                        op.get("jepsen_f") not in ("assign", "subscribe"), _named(op.get("value"), made)))
        if f == "truncation-detected" and kind in ("ok", "info") and op.get("offset") is not None:
            topic = op.get("topic") or ""
            t.truncations.append((op.get("process"), topic, named(topic, op.get("partition")), op["offset"], idx))
        elif f == "partition-mode" and kind == "ok":
            mode = (op.get("value") or {}).get("mode") if isinstance(op.get("value"), dict) else None
            if mode is not None:
                topic = op.get("topic") or ""
                t.modes.append((topic, named(topic, op.get("partition")), idx, mode))
        elif f in (KEY_REVOKED, KEY_ASSIGNED) and kind == "ok" and isinstance(op.get("value"), list):
            into = t.key_revoked if f == KEY_REVOKED else t.key_assigned
            for tp in op["value"]:
                if isinstance(tp, list) and len(tp) == 2 and isinstance(tp[1], int):
                    into.setdefault((tp[0], named(tp[0], tp[1])), []).append(idx)
        elif f == "restore" and kind == "ok" and op.get("offset") is not None:
            topic = op.get("topic") or ""
            t.restored.setdefault((topic, named(topic, op.get("partition"))), set()).add(op["offset"])
        elif f == "committed" and kind == "ok" and isinstance(op.get("value"), dict):
            topic, v = op.get("topic") or "", op["value"]
            for p, o in v.get("offsets") or ():
                t.committed.append(Committed(str(v.get("group")), topic, named(topic, p), o, idx))
        elif f == "coordinator" and kind == "ok" and isinstance(op.get("value"), dict):
            v = op["value"]
            if v.get("group") is not None and v.get("partition") is not None:
                t.coordinators.append((str(v["group"]), int(v["partition"]), idx))
        elif f == "start" and op.get("process") == "nemesis" and t.first_fault is None:
            t.first_fault = idx
    t.gone = made.gone
    return t
