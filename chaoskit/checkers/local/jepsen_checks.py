"""Jepsen's Kafka anomalies (jepsen.tests.kafka's `analysis`) in one process: the reference for
spark/jepsen_checks.py. docs/history.md says how each rule reads and where it differs from ours.

The checks of Jepsen's names that are also ours (lost-write, unseen, duplicate,
inconsistent-offsets, poll-skip, nonmonotonic-poll, nonmonotonic-send) are these functions on a
history read from Jepsen (`Tables.jepsen`), our checks.py's otherwise; the others (int-*, G1a,
precommitted-read) exist only here. Everything is judged per key (topic, partition) on its
*version order*: the offsets observed holding a value, by committed sends (ok, or info with some
send of its transaction read) and polls of any outcome (a failed poll still returned what the log
held), densely numbered; a value's place is its last. Only ok polls' reads count as read.
"""
from __future__ import annotations

from collections import defaultdict
from types import ModuleType
from typing import Any, Callable, Iterable

from chaoskit.checkers import cycles
from chaoskit.checkers.findings import Found, Row
from chaoskit.checkers.local.checks import _found, _send_row, _step_sort
from chaoskit.checkers.local.tables import Assign, Send, Tables

Key = tuple[Any, int]


def pick(ours: ModuleType, jepsen: ModuleType, name: str, is_jepsen: bool) -> Callable[[Any], Found]:
    """The engine's function for check `name`: Jepsen's rule on a Jepsen history (or when only
    Jepsen has the check), ours otherwise."""
    if (is_jepsen and hasattr(jepsen, name)) or not hasattr(ours, name):
        return getattr(jepsen, name)
    return getattr(ours, name)


class Versions:
    """Per key: the version order (offset -> values observed there), dense places, each value's
    first and last place, and the committed sends."""

    def __init__(self, t: Tables) -> None:
        self.read = {(d.topic, d.partition, d.value) for d in t.deliveries if d.value is not None}
        proven = {s.group for s in t.sends if s.status == "info" and (s.topic, s.partition, s.value) in self.read}
        self.committed = [s for s in t.sends if s.status == "ok" or (s.status == "info" and s.group in proven)]
        log: dict[Key, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
        for s in self.committed:
            if s.offset is not None and s.value is not None:
                log[(s.topic, s.partition)][s.offset].add(s.value)
        for d in (*t.deliveries, *t.failed_reads):  # a failed poll's records show what the log held too
            if d.value is not None:
                log[(d.topic, d.partition)][d.offset].add(d.value)
        self.log = log
        self.offsets: dict[Key, list[int]] = {k: sorted(v) for k, v in log.items()}  # place -> offset
        self.first: dict[tuple[Any, int, str], int] = {}
        self.last: dict[tuple[Any, int, str], int] = {}
        for k, offs in self.offsets.items():
            for i, o in enumerate(offs):
                for v in log[k][o]:
                    self.first.setdefault((*k, v), i)
                    self.last[(*k, v)] = i

    def place(self, topic: Any, partition: int, value: str | None) -> int | None:
        return self.last.get((topic, partition, value))

    def offset(self, topic: Any, partition: int, place: int) -> int:
        return self.offsets[(topic, partition)][place]


def _versions(t: Tables) -> Versions:
    if not hasattr(t, "_versions"):
        t._versions = Versions(t)  # type: ignore[attr-defined]
    return t._versions  # type: ignore[attr-defined]


def lost_write(t: Tables) -> Found:
    """Per key, the highest first place of a value an ok poll read bounds what must have been read:
    every value whose last place is at or below it, sent by a committed send, and never read is lost."""
    vo = _versions(t)
    read: dict[Key, set[str]] = defaultdict(set)
    for d in t.deliveries:
        if d.value is not None:
            read[(d.topic, d.partition)].add(d.value)
    writer: dict[tuple[Any, int, str | None], Send] = {}
    for s in sorted((s for s in t.sends if s.status is not None), key=lambda s: s.done_index):
        writer[(s.topic, s.partition, s.value)] = s  # Jepsen's writer-of: the last completion sending it
    committed = {id(s) for s in vo.committed}
    rows = []
    for k, vs in read.items():
        bound = max(vo.first[(*k, v)] for v in vs)
        for (topic, p, v), last in vo.last.items():
            if (topic, p) != k or last > bound or v in vs:
                continue
            w = writer.get((topic, p, v))
            if w is not None and id(w) in committed:
                rows.append(_send_row(w, offset=vo.offset(topic, p, vo.first[(topic, p, v)]),
                                      max_read=vo.offset(topic, p, bound)))
    judged = sum(1 for s in vo.committed if (s.topic, s.partition, s.value) in vo.read)
    return _found(rows, lambda r: r["index"], acked=len(vo.committed), acked_read=judged)


def unseen(t: Tables) -> Found:
    """Values of ok sends that no ok poll read on their key, lost ones included."""
    vo = _versions(t)
    ok = [s for s in t.sends if s.status == "ok"]
    rows = [_send_row(s) for s in ok if (s.topic, s.partition, s.value) not in vo.read]
    return _found(rows, lambda r: r["index"], acked=len(ok))


def duplicate(t: Tables) -> Found:
    """One value at more than one offset of one key."""
    vo = _versions(t)
    places: dict[tuple[Any, int, str], list[int]] = defaultdict(list)
    for k, by_offset in vo.log.items():
        for o, vs in by_offset.items():
            for v in vs:
                places[(*k, v)].append(o)
    rows = [{"value": v, "topic": topic, "partition": p, "count": len(offs),
             "positions": [[topic, p, o] for o in sorted(offs)]}
            for (topic, p, v), offs in places.items() if len(offs) > 1]
    return _found(rows, lambda r: (r["value"], r["topic"], r["partition"]), values=len(places))


def inconsistent_offsets(t: Tables) -> Found:
    """One offset of a key observed (committed send or ok poll) holding different values."""
    vo = _versions(t)
    rows = [{"topic": k[0], "partition": k[1], "offset": o, "values": sorted(vs)}
            for k, by_offset in vo.log.items() for o, vs in by_offset.items() if len(vs) > 1]
    return _found(rows, lambda r: (r["topic"], r["partition"], r["offset"]),
                  offsets=sum(len(v) for v in vo.log.values()))


def _kept(assigns: list[Assign], process: Any, key: Key, after: int, before: int) -> bool:
    """Whether `process`'s last read/send of `key` survives from index `after` to `before`: no
    assign/subscribe of it between them left the key out (Jepsen keeps only the keys they name)."""
    return not any(a.process == process and not a.rebalance and after < a.index < before and key not in a.partitions
                   for a in assigns)


def _step(vo: Versions, topic: Any, p: int, v1: str | None, v2: str | None) -> tuple[int, int, int] | None:
    """(delta, from offset, to offset) of two values of a key by version order; None if either has no place."""
    i1, i2 = vo.place(topic, p, v1), vo.place(topic, p, v2)
    if i1 is None or i2 is None:
        return None
    return i2 - i1, vo.offset(topic, p, i1), vo.offset(topic, p, i2)


def _groups(items: Iterable[Any], by: Callable[[Any], Any]) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = defaultdict(list)
    for x in items:
        out[by(x)].append(x)
    return out


def _pairs(t: Tables, items: list[Any], within: bool, at: Callable[[Any], Any],
           excused: set[tuple[int, Key]] = frozenset(), advances: Callable[[Any], bool] | None = None
           ) -> list[tuple[Any, Any]]:
    """Consecutive pairs (by `at`) of reads or sends of one key: inside one Jepsen op (`within`;
    not for a key `excused` in that op), or the last of a process's previous op touching the key
    and the first of its next (while no assign/subscribe between them left the key out). With
    `advances`, only the ops it holds true of are "previous" ones: Jepsen judges a failed or
    indeterminate poll against the last ok one, and only an ok poll moves the consumer on."""
    pairs = []
    if within:
        for (g, topic, p), xs in _groups(items, lambda x: (x.group, x.topic, x.partition)).items():
            if (g, (topic, p)) not in excused:
                xs.sort(key=at)
                pairs += list(zip(xs, xs[1:]))
        return pairs
    for (proc, topic, p), xs in _groups(items, lambda x: (x.process, x.topic, x.partition)).items():
        last = None
        for op in sorted(_groups(xs, lambda x: x.group).values(), key=lambda g: min(map(at, g))):
            first = min(op, key=at)
            if last is not None and _kept(t.assigns, proc, (topic, p), _index(last), _index(first)):
                pairs.append((last, first))
            if advances is None or advances(op[0]):
                last = max(op, key=at)
    return pairs


def _index(x: Any) -> int:
    """Where a read (its poll) or a send (its completion) is in the history."""
    return x.done_index if isinstance(x, Send) else x.index


def _steps(t: Tables, pairs: list[tuple[Any, Any]]) -> Iterable[tuple[Any, Any, int, Row]]:
    """Each pair whose values both have a place: (a, b, delta of places, row of the step)."""
    vo = _versions(t)
    for a, b in pairs:
        step = _step(vo, a.topic, a.partition, a.value, b.value)
        if step is not None:
            yield a, b, step[0], {"process": b.process, "topic": b.topic, "partition": b.partition,
                                  "from_offset": step[1], "to_offset": step[2], "index": b.index}


def _poll_rows(t: Tables, within: bool, skip: bool) -> tuple[list[Row], int]:
    excused = {(a.group, tp) for a in t.assigns if a.rebalance for tp in a.partitions}
    if within:
        pairs = _pairs(t, t.deliveries, within, lambda d: (d.index, d.pos), excused)
    else:  # every completed poll is judged, the ok ones alone move a process on
        ok = {id(d) for d in t.deliveries}
        pairs = _pairs(t, [*t.deliveries, *t.failed_reads], within, lambda d: (d.index, d.pos),
                       advances=lambda d: id(d) in ok)
    rows, steps = [], 0
    for _a, _b, delta, row in _steps(t, pairs):
        steps += 1
        if skip and delta > 1:
            rows.append({**row, "missed": delta - 1})
        elif not skip and delta < 1:
            rows.append(row)
    return rows, steps


def _across(t: Tables, skip: bool) -> Found:
    rows, steps = _poll_rows(t, within=False, skip=skip)
    if t.subscribed:  # Jepsen allows these under subscribe: a consumer may be rebalanced between ops
        return Found(0, [], {"steps": steps, "allowed": len(rows)})
    return _found(rows, _step_sort, steps=steps, allowed=0)


def poll_skip(t: Tables) -> Found:
    return _across(t, skip=True)


def nonmonotonic_poll(t: Tables) -> Found:
    return _across(t, skip=False)


def int_poll_skip(t: Tables) -> Found:
    rows, steps = _poll_rows(t, within=True, skip=True)
    return _found(rows, _step_sort, steps=steps)


def int_nonmonotonic_poll(t: Tables) -> Found:
    rows, steps = _poll_rows(t, within=True, skip=False)
    return _found(rows, _step_sort, steps=steps)


def _send_steps(t: Tables, within: bool) -> list[tuple[Any, Any, int, Row]]:
    """Consecutive sends of a key with places: inside one completed op (`within`), or between a
    process's consecutive ok/info send ops."""
    kinds = ("ok", "info", "fail") if within else ("ok", "info")
    return list(_steps(t, _pairs(t, [s for s in t.sends if s.status in kinds], within, lambda s: s.done_index)))


def _send_found(t: Tables, within: bool) -> Found:
    """Sends of a key going back (or staying) in the version order."""
    steps = _send_steps(t, within)
    rows = [row for _a, _b, delta, row in steps if delta < 1]
    return _found(rows, lambda r: (r["index"], r["partition"]), send_pairs=len(steps))


def nonmonotonic_send(t: Tables) -> Found:
    return _send_found(t, within=False)


def int_nonmonotonic_send(t: Tables) -> Found:
    return _send_found(t, within=True)


def int_send_skip(t: Tables) -> Found:
    """Two sends of a key in one op landing more than one place apart: Jepsen reports it and always
    allows it (a transaction's writes interleave with others'), so it is counted as allowed."""
    steps = _send_steps(t, within=True)
    return Found(0, [], {"send_pairs": len(steps), "allowed": sum(1 for *_, delta, _row in steps if delta > 1)})


def G1a(t: Tables) -> Found:  # noqa: N802 -- Jepsen's name
    failed = {(s.topic, s.partition, s.value): s for s in t.sends if s.status == "fail"}
    rows = [{"process": d.process, "topic": d.topic, "partition": d.partition, "offset": d.offset,
             "value": d.value, "index": d.index, "writer": failed[(d.topic, d.partition, d.value)].index}
            for d in t.deliveries if (d.topic, d.partition, d.value) in failed]
    return _found(rows, lambda r: (r["index"], r["partition"], r["offset"]), failed_sends=len(failed))


def precommitted_read(t: Tables) -> Found:
    """A transaction (one Jepsen op) that read a value it sent: one row per transaction, its first
    such (topic, partition, value)."""
    sent = {(s.group, s.topic, s.partition, s.value) for s in t.sends if s.status is not None}
    readers = {d.group for d in t.deliveries}
    both = {g for g, *_ in sent} & readers
    first: dict[int, Any] = {}
    for d in t.deliveries:
        if (d.group, d.topic, d.partition, d.value) in sent:
            key = (d.topic, d.partition, d.value)
            if d.group not in first or key < first[d.group][0]:
                first[d.group] = (key, d)
    rows = [{"process": d.process, "topic": k[0], "partition": k[1], "value": k[2], "index": d.index}
            for g, (k, d) in first.items()]
    return _found(rows, lambda r: r["index"], txns=len(both))


# --- cycles (checkers/cycles.py): Elle's G0 and G1c, and their -realtime forms ---------------------------
def _cycles(t: Tables) -> tuple[dict[str, list[list[Any]]], dict[Any, Any]]:
    """(the cycles by anomaly, the vertices), built once per tables for the four checks."""
    if not hasattr(t, "_cycles"):
        vo = _versions(t)
        txns = cycles.txn_ops(t.txn_rows)
        writer: dict[tuple[Any, int, str | None], Any] = {}
        for s in sorted((s for s in t.sends if s.status is not None), key=lambda s: s.done_index):
            writer[(s.topic, s.partition, s.value)] = s.group  # Jepsen's writer-of: the last completion sending it
        wr = {(writer[(d.topic, d.partition, d.value)], d.group, d.topic, d.partition, d.value)
              for d in (*t.deliveries, *t.failed_reads) if (d.topic, d.partition, d.value) in writer}
        ww = []
        for (topic, p), offs in vo.offsets.items():
            values = [min(vo.log[(topic, p)][o]) for o in offs]  # one value per offset, as Jepsen's by-index
            for v1, v2 in zip(values, values[1:]):
                if (topic, p, v1) in writer and (topic, p, v2) in writer:
                    ww.append((writer[(topic, p, v1)], writer[(topic, p, v2)], topic, p, v1, v2))
        t._cycles = (cycles.cycles_of(txns, wr, ww), txns)  # type: ignore[attr-defined]
    return t._cycles  # type: ignore[attr-defined]


def _cycle_found(t: Tables, name: str) -> Found:
    return cycles.found(name, *_cycles(t))


# named after the checks (catalog.py), as every check function of an engine
G0, G1c, G0_realtime, G1c_realtime = cycles.check_functions(_cycle_found)  # noqa: N816 -- Elle's names
