"""Seeded concurrent histories for the linearizability checker: linearizable by construction,
or with one planted violation.

N clients run ops against a simulated atomic store. Each op is invoked, takes effect at a
random point inside its [invoke, complete] interval (its linearization point) and completes, so
intervals of different clients overlap at random. Results come from applying the ops to the
store in linearization-point order, which makes the history linearizable. With `info_rate`, an
op's completion is lost (type info): it took effect or not by a coin flip, and its client goes
on as a new process, as in Jepsen. Every written value is unique (kv strings are `<serial>`
tokens, so a string's first token names the put or append that began it), which is what lets a
planted violation be proven rather than hoped for:

- stale-read: a read returns a value overwritten by a write that completed before the read began;
- lost-write: an acknowledged write never takes effect, and a later read shows the older state;
- real-time: a read returns a value written by a write invoked only after the read completed.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import Any, Callable

PLANTS = ("stale-read", "lost-write", "real-time")
KINDS = ("list-append", "kv", "cas-register")
KEYED = ("list-append", "kv")  # get/put/append on keys
READS = {"read", "get"}


@dataclass
class _Op:
    process: int
    f: str
    key: Any
    value: Any  # what the op was invoked with
    invoked: int
    point: int  # linearization point, ns
    completed: int
    info: bool = False  # its completion is lost
    took_effect: bool = True  # for an info op: whether it happened anyway
    type: str = "ok"
    result: Any = None  # reads: the observed state
    applied: bool = False
    produced: Any = None  # state-changing ops: the state right after they took effect
    source: "_Op | None" = None  # reads: the op whose effect they observed (None: the initial state)
    lost: bool = False  # planted: acknowledged but never applied
    index: int = -1  # its invoke's history index, once the events exist


@dataclass
class Synthetic:
    ops: list[dict]  # the history, ordered by index
    planted: dict[str, Any] | None = None  # {kind, op (invoke index), explanation}
    params: dict[str, Any] = field(default_factory=dict)


def generate(kind: str = "list-append", seed: int = 0, clients: int = 5, ops: int = 200, keys: int = 3,
             info_rate: float = 0.0, plant: str | None = None) -> Synthetic:
    """A history of `ops` ops from `clients` concurrent clients over `keys` keys (list-append, kv)
    or registers (cas-register; one register has no key column)."""
    if kind not in KINDS:
        raise ValueError(f"unknown history kind {kind!r}: choose one of {', '.join(KINDS)}")
    if plant is not None and plant not in PLANTS:
        raise ValueError(f"unknown violation {plant!r}: choose one of {', '.join(PLANTS)}")
    if clients < 1 or ops < 1 or keys < 1 or not 0 <= info_rate < 1:
        raise ValueError("clients, ops and keys are at least 1 and info_rate is in [0, 1)")
    rng = random.Random(seed)
    recs = _schedule(rng, kind, clients, ops, keys, info_rate)
    _apply(recs)
    explain = _plant(rng, recs, plant) if plant else None
    params = dict(kind=kind, seed=seed, clients=clients, ops=ops, keys=keys, info_rate=info_rate, plant=plant)
    history = _events(recs, kind, keys)
    return Synthetic(history, explain() if explain else None, params)


def _schedule(rng: random.Random, kind: str, clients: int, count: int, keys: int, info_rate: float) -> list[_Op]:
    """Each client invokes its next op a short gap after its last one completed."""
    free = [(rng.randrange(1_000_000), c) for c in range(clients)]
    process = list(range(clients))
    heapq.heapify(free)
    recs: list[_Op] = []
    written: dict[Any, list[Any]] = {}
    for serial in range(count):
        at, client = heapq.heappop(free)
        invoked = at + rng.randrange(1, 500_000)
        point = invoked + rng.randrange(1, 2_000_000)
        completed = point + rng.randrange(1, 2_000_000)
        key = rng.randrange(keys)
        f, value = _choose(rng, kind, written.setdefault(key, []), serial)
        rec = _Op(process[client], f, key, value, invoked, point, completed, info=rng.random() < info_rate,
                  took_effect=rng.random() < 0.5)
        recs.append(rec)
        if rec.info:
            process[client] += clients  # a crashed client comes back as a new process
        heapq.heappush(free, (completed, client))
    return recs


def _choose(rng: random.Random, kind: str, written: list[Any], serial: int) -> tuple[str, Any]:
    roll = rng.random()
    if kind in KEYED:
        value = f"<{serial}>" if kind == "kv" else serial
        return ("get", None) if roll < 0.5 else ("put" if roll < 0.75 else "append", value)
    if roll < 0.4:
        return "read", None
    if roll < 0.7 or not written:
        written.append(serial)
        return "write", serial
    written.append(serial)
    # cas from a recent value: some succeed, some fail
    return "cas", [rng.choice(written[-3:-1] or [None]), serial]


def _apply(recs: list[_Op]) -> None:
    """Run the ops on an atomic store in linearization-point order (again after a plant changes one)."""
    store: dict[Any, tuple[Any, _Op | None]] = {}
    for rec in sorted(recs, key=lambda r: r.point):
        state, source = store.get(rec.key, (None, None))
        rec.type, rec.applied, rec.produced, rec.result, rec.source = "info" if rec.info else "ok", False, None, None, None
        if rec.info and not rec.took_effect:
            continue
        if rec.f in READS:
            rec.result, rec.source = state, source
        elif rec.f == "cas" and state != rec.value[0]:
            rec.type = "info" if rec.info else "fail"
        elif not rec.lost:
            rec.produced = _effect(rec, state)
            rec.applied = True
            store[rec.key] = (rec.produced, rec)


def _effect(rec: _Op, state: Any) -> Any:
    if rec.f == "cas":
        return rec.value[1]
    if rec.f == "append" and isinstance(rec.value, str):
        return (state or "") + rec.value  # kv: string concatenation
    if rec.f == "append":
        return [rec.value] if state is None else (state + [rec.value] if isinstance(state, list) else [state, rec.value])
    return rec.value


def _writes(recs: list[_Op]) -> list[_Op]:
    return [r for r in recs if r.applied and r.type == "ok"]


def _reads(recs: list[_Op]) -> list[_Op]:
    return [r for r in recs if r.f in READS and r.type == "ok"]


Explain = Callable[[], dict[str, Any]]  # the plant's description, once invoke indexes exist


def _plant(rng: random.Random, recs: list[_Op], kind: str) -> Explain:
    """Make one op wrong in a way no linearization can explain (see the module docstring)."""
    reads, writes = _reads(recs), _writes(recs)
    rng.shuffle(reads)
    rng.shuffle(writes)
    if kind == "lost-write":
        return _lose_a_write(recs, writes)
    for read in reads:
        for newer in writes:
            if newer.key != read.key:
                continue
            if kind == "real-time" and read.completed < newer.invoked:
                read.result = newer.produced
                return lambda: _planted(kind, read, f"read {read.index} returned {newer.produced!r}, written by "
                                                    f"op {newer.index} invoked only after the read completed")
            if kind != "stale-read" or newer.completed >= read.invoked:
                continue
            older = [w for w in writes if w.key == read.key and w.completed < newer.invoked]
            if older:
                read.result = older[0].produced
                return lambda: _planted(kind, read, f"read {read.index} returned {older[0].produced!r}, overwritten "
                                                    f"by op {newer.index} which completed before the read began")
    raise ValueError(f"no place to plant a {kind} in this history: make it longer or use fewer keys")


def _lose_a_write(recs: list[_Op], writes: list[_Op]) -> Explain:
    for lost in writes:
        if lost.f == "cas":
            continue  # keep the proof simple: a lost put/write/append
        lost.lost = True
        _apply(recs)
        for read in _reads(recs):
            # it began after the lost write was acknowledged, yet saw a state from before that write began
            if read.key == lost.key and read.invoked > lost.completed and (
                    read.source is None or read.source.completed < lost.invoked):
                return lambda: _planted("lost-write", lost, f"op {lost.index} ({lost.f} {lost.value!r}) was "
                                                            f"acknowledged but never took effect: read {read.index} "
                                                            f"began after it and saw {read.result!r}")
        lost.lost = False
        _apply(recs)
    raise ValueError("no place to plant a lost-write in this history: make it longer or use fewer keys")


def _planted(kind: str, rec: _Op, explanation: str) -> dict[str, Any]:
    return {"kind": kind, "op": rec.index, "explanation": explanation}


def _events(recs: list[_Op], kind: str, keys: int) -> list[dict]:
    events = []
    for rec in recs:
        invoke = {"process": rec.process, "type": "invoke", "f": rec.f, "value": rec.value}
        done = {"process": rec.process, "type": rec.type, "f": rec.f,
                "value": rec.result if rec.f in READS and rec.type == "ok" else rec.value}
        if rec.f in READS and rec.type == "info":
            done["value"] = None
        elif kind == "kv" and rec.f in READS and done["value"] is None:
            done["value"] = ""  # a missing key reads as the empty string, as Porcupine's histories say
        if kind in KEYED or keys > 1:
            invoke["key"] = done["key"] = rec.key
        events.append((rec.invoked, invoke, rec))
        events.append((rec.completed, done, None))
    events.sort(key=lambda e: e[0])
    ops = []
    for index, (at, op, rec) in enumerate(events):
        op["index"], op["time_ns"] = index, at
        if rec is not None:
            rec.index = index
        ops.append(op)
    return ops
