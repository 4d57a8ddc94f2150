"""The checks in one process (engine "local"): the same logic as spark/checks.py, over local/tables.py.

Each function takes the Tables and returns a Found whose rows are sorted as the Spark version
sorts them, with the counts of what it had to judge (its evidence; catalog.py names the one that
must not be zero), and findings.py turns both engines' into the same CheckResult.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any, Callable

from chaoskit.checkers.catalog import MOVED_CHANCES, MOVED_MARGIN_NS, NOT_MOVED, OUT_OF_ORDER
from chaoskit.checkers.findings import Found, Row
from chaoskit.checkers.local.tables import READONLY_MODES, Delivery, Send, Tables
from chaoskit.checkers.result import MAX_WITNESSES as LIMIT


def _found(rows: list[Row], sort: Callable[[Row], Any], **counts: int) -> Found:
    rows.sort(key=sort)
    return Found(len(rows), rows[:LIMIT], counts)


def _nulls_first(*values: Any) -> tuple[Any, ...]:
    # Spark sorts nulls first in ascending order; so do we
    return tuple((v is not None, v if v is not None else 0) for v in values)


def _delivered(t: Tables) -> set[str | None]:
    return {d.value for d in t.deliveries}


def _max_read(t: Tables) -> dict[tuple[Any, int], int]:
    out: dict[tuple[Any, int], int] = {}
    for d in t.deliveries:
        k = (d.topic, d.partition)
        if d.offset > out.get(k, -1):
            out[k] = d.offset
    return out


def _send_row(s: Send, **extra: Any) -> Row:
    return {"process": s.process, "key": s.key, "value": s.value, "topic": s.topic, "partition": s.partition,
            "offset": s.offset, "index": s.index, **extra}


def _never_read(t: Tables, lost: bool) -> Found:
    delivered, max_read = _delivered(t), _max_read(t)
    acked = t.acked()
    read = sum(1 for s in acked if s.value in delivered)
    rows = []
    for s in acked:
        if s.value in delivered:
            continue
        top = max_read.get((s.topic, s.partition))
        if lost and top is not None and top > s.offset:
            rows.append(_send_row(s, max_read=top))
        elif not lost and (top is None or top <= s.offset):
            rows.append(_send_row(s))
    after = sum(1 for s in acked if s.done_index > t.first_fault) if t.first_fault is not None else 0
    return _found(rows, lambda r: r["index"], acked=len(acked), acked_read=read, acked_after_fault=after)


def lost_write(t: Tables) -> Found:
    return _never_read(t, lost=True)


def unseen(t: Tables) -> Found:
    return _never_read(t, lost=False)


def _observations(t: Tables) -> list[tuple[Any, int, int, str | None, int]]:
    """(topic, partition, offset, value, index): each acknowledged send and each delivery."""
    obs = [(s.topic, s.partition, s.offset, s.value, s.done_index) for s in t.acked()]
    obs += [(d.topic, d.partition, d.offset, d.value, d.index) for d in t.deliveries]
    return obs


def duplicate(t: Tables) -> Found:
    """One value at two places. A value seen at an offset that later held another value was replaced by
    a truncation, not written twice: that place does not count (truncation-undetected judges reads of it)."""
    seen = [ob for ob in _observations(t) if ob[3] is not None]
    last: dict[tuple[Any, int, int], tuple[int, str | None]] = {}
    for topic, p, o, v, idx in seen:
        if idx >= last.get((topic, p, o), (-1, None))[0]:
            last[(topic, p, o)] = (idx, v)
    places: dict[str | None, set[tuple[Any, int, int]]] = defaultdict(set)
    for topic, p, o, v, _ in seen:
        if last[(topic, p, o)][1] == v:
            places[v].add((topic, p, o))
    rows = [{"value": v, "count": len(ps), "positions": [list(x) for x in sorted(ps)]}
            for v, ps in places.items() if len(ps) > 1]
    return _found(rows, lambda r: r["value"], values=len(places))  # the values judged: each offset's last


def inconsistent_offsets(t: Tables) -> Found:
    values: dict[tuple[Any, int, int], set[str | None]] = defaultdict(set)
    for topic, p, o, v, _ in _observations(t):
        if v is not None:
            values[(topic, p, o)].add(v)
    rows = [{"topic": k[0], "partition": k[1], "offset": k[2], "values": sorted(vs)}
            for k, vs in values.items() if len(vs) > 1]
    return _found(rows, lambda r: _nulls_first(r["topic"], r["partition"], r["offset"]), offsets=len(values))


def _replaced_offsets(t: Tables) -> dict[tuple[Any, int], list[int]]:
    """(topic, partition) -> the offsets (ascending) seen holding two different values: a truncation
    replaced what was there."""
    values: dict[tuple[Any, int, int], set[str]] = defaultdict(set)
    for topic, p, o, v, _ in _observations(t):
        if v is not None:
            values[(topic, p, o)].add(v)
    out: dict[tuple[Any, int], list[int]] = defaultdict(list)
    for (topic, p, o), vs in values.items():
        if len(vs) > 1:
            out[(topic, p)].append(o)
    return {k: sorted(v) for k, v in out.items()}


def _known_offsets(t: Tables) -> dict[tuple[Any, int], list[int]]:
    known: dict[tuple[Any, int], set[int]] = defaultdict(set)
    for topic, p, o, _, _ in _observations(t):
        known[(topic, p)].add(o)
    return {k: sorted(v) for k, v in known.items()}


def _poll_steps(t: Tables) -> list[tuple[Delivery, Delivery]]:
    """Consecutive deliveries of one partition to one process with no position reset between."""
    by: dict[tuple[Any, Any, int, int], list[Delivery]] = defaultdict(list)
    for d in t.deliveries:
        era = bisect.bisect_left(t.resets.get(d.process, []), d.index)
        by[(d.process, d.topic, d.partition, era)].append(d)
    steps = []
    for ds in by.values():
        ds.sort(key=lambda d: (d.index, d.pos))
        steps += list(zip(ds, ds[1:]))
    return steps


def _step_row(a: Delivery, b: Delivery, **extra: Any) -> Row:
    return {"process": a.process, "topic": a.topic, "partition": a.partition, "from_offset": a.offset,
            "to_offset": b.offset, "index": b.index, **extra}


def _step_sort(r: Row) -> Any:
    return (r["index"], r["partition"], r["to_offset"])


def poll_skip(t: Tables) -> Found:
    known = _known_offsets(t)
    rows = []
    steps = _poll_steps(t)
    for a, b in steps:
        if b.offset > a.offset:
            offs = known[(a.topic, a.partition)]
            missed = bisect.bisect_left(offs, b.offset) - bisect.bisect_right(offs, a.offset)
            if missed > 0:
                rows.append(_step_row(a, b, missed=missed))
    return _found(rows, _step_sort, steps=len(steps))


def nonmonotonic_poll(t: Tables) -> Found:
    """A step back to offset B from A is the consumer going back over a truncation (KIP-320's
    re-read) when an offset between them, B..A, was replaced; any other step back is an anomaly."""
    replaced = _replaced_offsets(t)
    steps = _poll_steps(t)
    rows = []
    for a, b in steps:
        if b.offset <= a.offset:
            offs = replaced.get((a.topic, a.partition), [])
            i = bisect.bisect_left(offs, b.offset)
            if i == len(offs) or offs[i] > a.offset:
                rows.append(_step_row(a, b))
    return _found(rows, _step_sort, steps=len(steps))


def _consecutive(items: list[Any], by: Callable[[Any], tuple[Any, ...]],
                 index: Callable[[Any], int]) -> list[tuple[Any, Any]]:
    """Within each `by` group, in `index` order, each pair of consecutive items."""
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for x in items:
        groups[by(x)].append(x)
    pairs: list[tuple[Any, Any]] = []
    for xs in groups.values():
        xs.sort(key=index)
        pairs += zip(xs, xs[1:])
    return pairs


def nonmonotonic_send(t: Tables) -> Found:
    pairs = _consecutive(t.acked(), lambda s: (s.process, s.topic, s.partition), lambda s: s.index)
    rows = [{"process": b.process, "topic": b.topic, "partition": b.partition, "from_offset": a.offset,
             "to_offset": b.offset, "index": b.index} for a, b in pairs if b.offset <= a.offset]
    return _found(rows, lambda r: r["index"], send_pairs=len(pairs))


def commit_regressed(t: Tables) -> Found:
    """A group's committed offset of a partition read lower than the read before (-1: gone); its
    evidence, the pairs whose first read found a record's consumption committed (an offset above 0)."""
    pairs = [(a, b) for a, b in _consecutive(t.committed, lambda c: (c.group, c.topic, c.partition),
                                             lambda c: c.index) if a.offset >= 0]
    rows = [{"group": b.group, "topic": b.topic, "partition": b.partition, "from_offset": a.offset,
             "from_index": a.index, "to_offset": b.offset, "index": b.index} for a, b in pairs if b.offset < a.offset]
    return _found(rows, lambda r: (r["index"], r["partition"]), commit_pairs=sum(a.offset > 0 for a, _ in pairs))


def _key_row(a: Send, b: Send, da: Delivery, db: Delivery, reason: str) -> Row:
    return {"process": a.process, "key": a.key, "first": a.value, "second": b.value,
            "first_partition": a.partition, "second_partition": b.partition,
            "first_delivered": da.index, "second_delivered": db.index, "index": b.index, "reason": reason}


def _key_moved(t: Tables, da: Delivery, db: Delivery) -> bool:
    """A key-revoked of da's partition, then a key-assigned of db's, both between the two deliveries
    (the earliest such revoke leaves the most room for the assign); or da's partition removed
    between them (history/incarnations.py): nothing was left there to wait for."""
    if da.index < t.gone.get((da.topic, da.partition), -1) < db.index:
        return True
    revoked = t.key_revoked.get((da.topic, da.partition), [])
    i = bisect.bisect_right(revoked, da.index)
    if i == len(revoked) or revoked[i] >= db.index:
        return False
    assigned = t.key_assigned.get((db.topic, db.partition), [])
    j = bisect.bisect_right(assigned, revoked[i])
    return j < len(assigned) and assigned[j] < db.index


def key_order(t: Tables) -> Found:
    first: dict[str | None, Delivery] = {}
    for d in t.deliveries:
        f = first.get(d.value)
        if f is None or (d.index, d.pos) < (f.index, f.pos):
            first[d.value] = d
    by: dict[tuple[Any, Any], list[Send]] = defaultdict(list)
    for s in t.sends:
        if s.key is not None and s.value in first:
            by[(s.process, s.key)].append(s)
    # clients without KIP-253's key listener record no key callbacks: their topics are judged on deliveries
    keyed = {topic for topic, _ in (*t.key_revoked, *t.key_assigned)}
    rows, cross, pairs, moved = [], 0, 0, 0
    for ss in by.values():
        ss.sort(key=lambda s: s.index)
        pairs += len(ss) - 1
        for a, b in zip(ss, ss[1:]):
            da, db = first[a.value], first[b.value]
            moved += da.topic == db.topic and da.partition != db.partition
            if (db.index, db.pos) < (da.index, da.pos):
                rows.append(_key_row(a, b, da, db, OUT_OF_ORDER))
            elif da.topic == db.topic and da.partition != db.partition and da.topic in keyed:
                cross += 1
                if not _key_moved(t, da, db):
                    rows.append(_key_row(a, b, da, db, NOT_MOVED % (da.partition, db.partition)))
    return _found(rows, lambda r: r["index"], key_pairs=pairs, moved_pairs=moved, cross_partition_pairs=cross)


def _later_low(points: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """(indices ascending, the lowest offset at or after each position): what was read or reported
    after a given index, at its lowest."""
    points.sort()
    low, lows = None, []
    for _, offset in reversed(points):
        low = offset if low is None else min(low, offset)
        lows.append(low)
    return [i for i, _ in points], lows[::-1]


def truncation_undetected(t: Tables) -> Found:
    """A record a consumer read whose offset later held something else was replaced by a truncation.
    It was detected if, after that read, its partition was read again at or below its offset (the
    consumers went back to re-read what was replaced, as KIP-320's reset to the divergence offset
    does) or a truncation at or below it was reported; judged by what the clients did, whatever
    they report about themselves. A read is judged only when the partition was read again once
    the replacement was seen: consumers that never read it again never read past what it replaced."""
    latest: dict[tuple[Any, int, int], list[tuple[int, str | None]]] = defaultdict(list)
    for topic, p, o, v, idx in _observations(t):
        latest[(topic, p, o)].append((idx, v))
    after: dict[tuple[Any, int], list[tuple[int, int]]] = defaultdict(list)  # re-reads and reports
    last_read: dict[tuple[Any, int], int] = {}
    for d in t.deliveries:
        after[(d.topic, d.partition)].append((d.index, d.offset))
        last_read[(d.topic, d.partition)] = max(d.index, last_read.get((d.topic, d.partition), -1))
    for _proc, topic, p, off, idx in t.truncations:
        after[(topic, p)].append((idx, off))
    lows = {k: _later_low(v) for k, v in after.items()}
    rows, replaced = [], 0
    for d in t.deliveries:
        later = {idx: v for idx, v in latest[(d.topic, d.partition, d.offset)]
                 if idx > d.index and v != d.value and v is not None}
        if not later or last_read[(d.topic, d.partition)] <= min(later):
            continue
        later = sorted(set(later.values()))
        replaced += 1
        indices, low = lows[(d.topic, d.partition)]
        i = bisect.bisect_right(indices, d.index)
        if i < len(indices) and low[i] <= d.offset:
            continue
        rows.append({"process": d.process, "topic": d.topic, "partition": d.partition, "offset": d.offset,
                     "value": d.value, "index": d.index, "later": later})
    return _found(rows, lambda r: (r["index"], r["partition"], r["offset"]), replaced_reads=replaced)


def write_to_readonly(t: Tables) -> Found:
    modes: dict[tuple[Any, int], list[tuple[int, str]]] = defaultdict(list)
    for topic, p, idx, mode in t.modes:
        modes[(topic, p)].append((idx, mode))
    for v in modes.values():
        v.sort()
    def mode_at(topic: Any, partition: int | None, index: int) -> tuple[int, str] | None:
        ms = modes.get((topic, partition), [])
        i = bisect.bisect_left(ms, (index, "")) - 1
        return ms[i] if i >= 0 else None

    rows = []
    for s in t.acked():
        m = mode_at(s.topic, s.partition, s.index)
        if m is not None and m[1] in READONLY_MODES:
            rows.append(_send_row(s, mode=m[1], mode_index=m[0]))
    # the evidence: sends whose key was last acknowledged on a partition that was ReadOnly/None when
    # they were invoked, so each had to go elsewhere (or be refused) for the claim to be tested at all
    displaced, last_home = 0, {}
    for s in sorted(t.sends, key=lambda s: s.index):
        home = last_home.get((s.topic, s.key))
        m = mode_at(s.topic, home, s.index) if home is not None else None
        displaced += m is not None and m[1] in READONLY_MODES
        if s.status == "ok" and s.partition is not None and s.key is not None:
            last_home[(s.topic, s.key)] = s.partition
    return _found(rows, lambda r: r["index"], displaced_sends=displaced)


def moved_value_kept(t: Tables) -> Found:
    # each key's last write on a partition (its highest offset there) that the key then left: judged
    # once compaction passed that partition MOVED_MARGIN_NS after at least MOVED_CHANCES of the key's
    # writes elsewhere (each sent §9's tombstone), shown by an acknowledged record the restore read
    # no longer found below one it did; kept: the restore read still found it
    top = {tp: max(offsets) for tp, offsets in t.restored.items() if offsets}
    acked = [s for s in t.acked() if s.key is not None and s.invoke_ns is not None and s.done_ns is not None]
    passed: dict[tuple[Any, int], int] = {}  # (topic, partition) -> when compaction last showed there
    for s in acked:
        tp = (s.topic, s.partition)
        if tp in top and s.offset < top[tp] and s.offset not in t.restored[tp]:
            passed[tp] = max(passed.get(tp, s.invoke_ns), s.invoke_ns)
    by_key: dict[tuple[Any, Any], list[Send]] = defaultdict(list)
    for s in acked:
        by_key[(s.topic, s.key)].append(s)
    rows, judged = [], 0
    for (topic, _key), sends in by_key.items():
        last: dict[int, Send] = {}
        for s in sends:
            if s.partition not in last or s.offset > last[s.partition].offset:  # type: ignore[operator]
                last[s.partition] = s  # type: ignore[index]
        for old_p, old in last.items():
            until = passed.get((topic, old_p))
            later = [] if until is None else [
                s for s in sends if s.partition != old_p and s.index > old.done_index  # type: ignore[operator]
                and s.done_ns + MOVED_MARGIN_NS <= until]  # type: ignore[operator]
            if len(later) < MOVED_CHANCES:
                continue
            judged += 1
            if old.offset in t.restored[(topic, old_p)]:
                first = min(later, key=lambda s: s.index)
                rows.append(_send_row(old, moved_to=first.partition, writes=len(later)))
    return _found(rows, lambda r: r["index"], moved_keys=judged)


def double_owner(t: Tables) -> Found:
    """A member's delivery of a partition after another member's, which came after the first
    member's own earlier one, with no assignment of the first member between its two."""
    assigned: dict[Any, list[int]] = defaultdict(list)
    for a in t.assigns:
        assigned[a.process].append(a.index)
    for indices in assigned.values():
        indices.sort()
    by: dict[tuple[Any, int], list[Delivery]] = defaultdict(list)
    for d in t.deliveries:
        by[(d.topic, d.partition)].append(d)
    rows, handovers = [], 0
    for ds in by.values():
        ds.sort(key=lambda d: (d.index, d.pos))
        last: dict[Any, Delivery] = {}  # each process's latest delivery of the partition
        for prev, d in zip([None, *ds], ds):
            mine = last.get(d.process)
            last[d.process] = d
            if prev is None or prev.process == d.process:
                continue
            handovers += 1
            if mine is None or mine.index >= prev.index:
                continue
            between = assigned.get(d.process, [])
            if bisect.bisect_right(between, mine.index) == bisect.bisect_left(between, d.index):
                rows.append({"topic": d.topic, "partition": d.partition, "process": d.process,
                             "from_offset": mine.offset, "from_index": mine.index, "other": prev.process,
                             "other_offset": prev.offset, "other_index": prev.index, "offset": d.offset,
                             "index": d.index})
    return _found(rows, lambda r: (r["index"], r["partition"]), handovers=handovers)


def coordinator_split(t: Tables) -> Found:
    parts: dict[str, set[int]] = defaultdict(set)
    for group, p, _ in t.coordinators:
        parts[group].add(p)
    rows = [{"group": g, "partitions": sorted(ps)} for g, ps in parts.items() if len(ps) > 1]
    return _found(rows, lambda r: r["group"], groups=len(parts), answers=len(t.coordinators))
