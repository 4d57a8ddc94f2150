"""Synthetic Kafka histories, seeded, clean or with planted anomalies of each kind the checks know.

    s = generate(seed=7, events=20_000, plant=["key-order", "lost-write"])
    s.ops        # the history (ops of docs/history.md, index and time_ns stamped)
    s.expected   # {check name: anomalies planted}; every other check must find 0

A small simulated topic: producers send keyed values (key kN starts in partition N % partitions),
each partition is a log, consumers own partitions and poll them in offset order, rebalance
callbacks and a coordinator observation per consumer are recorded, nemesis windows come and go
(send latency grows inside them), now and then a key moves to another partition as KIP-253 moves
it (its old partition drained, key-revoked, then key-assigned, then the new partition takes its
sends), and at the end every consumer drains, the last partition turns ReadOnly, a key moves
once more and, after a pause, compaction shows on its old partition, and the topic is read back
from its start (`restore` ops: each key's latest record in the partition it was last written to,
as KIP-253 §9's tombstones and compaction leave the log, and each partition's last record). A
clean history breaks no check. Each plant adds one anomaly the way a broken cluster or client would,
on keys of its own so it cannot trip another check by accident:

* lost-write: a consumer is re-assigned past an acknowledged record (it is never read, a later one is);
* unseen: an acknowledged record at the end that no poll reads;
* duplicate: one send written twice (a retried send without idempotence);
* inconsistent-offsets: an indeterminate send is read, then truncated away and replaced; the
  consumer reports the truncation (so truncation-undetected finds nothing);
* truncation-undetected: as above, but the consumer neither reports it nor reads the replaced
  offset again: it goes on past it (also one inconsistent-offsets);
* poll-skip: a consumer jumps over one offset (the partition's next owner reads it);
* nonmonotonic-poll: a consumer is rewound one poll without a rebalance;
* nonmonotonic-send: two sends of one producer land in the log in the opposite order;
* key-order: a key's second send goes to another partition and is delivered first;
* key-callbacks: a key moves to another partition and is delivered in order, but once with no
  key callbacks between the deliveries and once with key-assigned before key-revoked (two key-order);
* write-to-readonly: a send acknowledged after its partition became ReadOnly;
* moved-value-kept: a key that moved at the end keeps its last old value in the restore read;
* coordinator-split: a consumer finds its group on a second coordinator partition;
* commit-regressed: the group's committed offset of a partition reads as gone (-1) once.

A watcher process reads the group's committed offsets (each partition's furthest position so far)
every READ_EVERY events.

`ops()` yields the same history lazily (constant memory for benchmark-sized histories).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterator

from chaoskit.history.schema import KEY_ASSIGNED, KEY_REVOKED, RESTORE_PROCESS, Op

KINDS = ("lost-write", "unseen", "duplicate", "inconsistent-offsets", "poll-skip", "nonmonotonic-poll",
         "nonmonotonic-send", "key-order", "key-callbacks", "truncation-undetected", "write-to-readonly",
         "moved-value-kept", "coordinator-split", "commit-regressed")
# what each plant makes the checks find (every other check: nothing)
FINDS: dict[str, dict[str, int]] = {k: {k: 1} for k in KINDS}
# going on past a truncation also skips the record that replaced the one read: lost for that consumer
FINDS["truncation-undetected"] = {"truncation-undetected": 1, "inconsistent-offsets": 1, "lost-write": 1}
FINDS["key-callbacks"] = {"key-order": 2}
_AT_END = ("write-to-readonly", "unseen", "moved-value-kept")
COMPACTION_PAUSE_NS = 3_000_000_000  # the cleaner trails the writes: longer than moved-value-kept's margin
TOPIC, GROUP = "orders", "chaoskit-synthetic"
READ_EVERY = 400  # events between the watcher's reads of the committed offsets
READ_GAP_NS = 100_000  # a read's ops are this far apart: a fixed gap draws nothing from the seed


@dataclass
class Synthetic:
    ops: list[Op]
    expected: dict[str, int] = field(default_factory=dict)


def expected_for(plant: list[str] | tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for kind in plant:
        for name, n in FINDS[kind].items():
            out[name] = out.get(name, 0) + n
    return out


def _check_args(plant: Any, producers: int, consumers: int, partitions: int) -> list[str]:
    plant = list(plant)
    bad = [k for k in plant if k not in KINDS]
    if bad:
        raise ValueError(f"cannot plant {bad}: the kinds are {', '.join(KINDS)}")
    if consumers < 2 or partitions < 4 or producers < 1:
        raise ValueError("a synthetic history needs at least 1 producer, 2 consumers and 4 partitions "
                         f"(got {producers}, {consumers}, {partitions})")
    return plant


def generate(seed: int = 0, events: int = 10_000, plant: list[str] | tuple[str, ...] = (), producers: int = 4,
             consumers: int = 3, partitions: int = 6, keys: int = 24) -> Synthetic:
    return Synthetic(list(ops(seed, events, plant, producers, consumers, partitions, keys)), expected_for(plant))


def ops(seed: int = 0, events: int = 10_000, plant: list[str] | tuple[str, ...] = (), producers: int = 4,
        consumers: int = 3, partitions: int = 6, keys: int = 24) -> Iterator[Op]:
    plant = _check_args(plant, producers, consumers, partitions)
    sim = _Sim(random.Random(seed), producers, consumers, partitions, keys)
    yield from sim.flush()
    during = [k for k in plant if k not in _AT_END]
    marks = [events * (i + 1) // (len(during) + 2) for i in range(len(during))]
    while sim.count < events:
        if during and sim.count >= marks[0]:
            marks.pop(0)
            getattr(sim, "plant_" + during.pop(0).replace("-", "_"))()
        else:
            sim.step()
        yield from sim.flush()
    for kind in during:  # a history too short to reach every mark
        getattr(sim, "plant_" + kind.replace("-", "_"))()
    sim.finish([k for k in plant if k in _AT_END])
    yield from sim.flush()


class _Sim:
    def __init__(self, rng: random.Random, producers: int, consumers: int, partitions: int, keys: int) -> None:
        self.rng, self.keys, self.partitions = rng, keys, partitions
        self.producers = list(range(producers))
        self.consumers = list(range(producers, producers + consumers))
        self.logs: list[list[tuple[Any, list[Any]]]] = [[] for _ in range(partitions)]  # (key, value) by offset
        self.last_partition: dict[Any, int] = {}  # the partition each key was last written to
        self.kept_old: set[Any] = set()  # keys whose old values the restore read still finds (the plant)
        self.epochs = [0] * partitions
        self.owner = {p: self.consumers[p % consumers] for p in range(partitions)}
        self.home = {f"k{k}": k % partitions for k in range(keys)}  # where each key's sends go now
        self.pos: dict[tuple[int, int], int] = {}
        self.seq = 0
        self.fresh = 0
        self.count = 0
        self.t = 0
        self.window: int | None = None
        self.windows = 0
        self.watcher = producers + consumers
        self.committed: dict[int, int] = {}  # partition -> the furthest position the watcher read
        self.reads = 0
        self.out: list[Op] = []
        for c in self.consumers:
            self.emit({"process": c, "type": "ok", "f": "coordinator",
                       "value": {"group": GROUP, "partition": 7, "node": 1}})
            self.emit_assigned(c)

    # --- recording -----------------------------------------------------------------------------
    def emit(self, op: Op, latency: bool = False, gap_ns: int | None = None) -> None:
        self.t += self.rng.randint(20_000, 200_000) if gap_ns is None else gap_ns
        if latency:
            self.t += self.rng.randint(1_000_000, 5_000_000) * (8 if self.window is not None else 1)
        op["index"], op["time_ns"] = self.count, self.t
        self.count += 1
        self.out.append(op)

    def flush(self) -> list[Op]:
        out, self.out = self.out, []
        return out

    def emit_assigned(self, c: int) -> None:
        mine = sorted(p for p, o in self.owner.items() if o == c)
        self.emit({"process": c, "type": "ok", "f": "on_partitions_assigned", "value": [[TOPIC, p] for p in mine]})

    # --- the simulated cluster -----------------------------------------------------------------
    def fresh_key(self, kind: str) -> str:
        self.fresh += 1
        return f"{kind}-{self.fresh}"

    def invoke_send(self, producer: int, key: str) -> Op:
        self.seq += 1
        op = {"process": producer, "type": "invoke", "f": "send", "topic": TOPIC, "key": key,
              "value": [producer, key, self.seq]}
        self.emit(dict(op))
        return op

    def write(self, p: int, op: Op, copies: int = 1) -> int:
        offset = len(self.logs[p])
        for _ in range(copies):
            self.logs[p].append((op["key"], op["value"]))
        self.last_partition[op["key"]] = p
        return offset

    def complete(self, op: Op, p: int | None, offset: int | None, status: str = "ok") -> None:
        done = {**op, "type": status}
        if status == "ok":
            done.update(partition=p, offset=offset, leader_epoch=self.epochs[p])
        else:
            done["error"] = "KafkaTimeoutError: no answer in 30 s" if status == "info" else \
                "NotLeaderForPartitionError: refused"
        self.emit(done, latency=True)

    def send(self, producer: int, key: str, p: int, status: str = "ok", written: bool = True,
             copies: int = 1) -> int | None:
        op = self.invoke_send(producer, key)
        offset = self.write(p, op, copies) if written else None
        self.complete(op, p, offset, status)
        return offset

    def poll(self, c: int, limit: int = 50) -> None:
        self.emit({"process": c, "type": "invoke", "f": "poll", "topic": TOPIC})
        records = []
        for p in sorted(p for p, o in self.owner.items() if o == c):
            at = self.pos.get((c, p), 0)
            end = min(len(self.logs[p]), at + limit)
            records += [[p, o, self.logs[p][o][0], self.logs[p][o][1], self.epochs[p]] for o in range(at, end)]
            self.pos[(c, p)] = end
        self.emit({"process": c, "type": "ok", "f": "poll", "topic": TOPIC, "value": records}, latency=True)

    def caught_up(self, c: int) -> bool:
        return all(self.pos.get((c, p), 0) >= len(self.logs[p]) for p, o in self.owner.items() if o == c)

    def drain(self, *cs: int) -> None:
        for c in cs:
            while not self.caught_up(c):
                self.poll(c)

    def move(self, p: int, to: int, offset: int) -> None:
        """A rebalance: partition p goes to consumer `to`, which starts reading at `offset`."""
        old = self.owner[p]
        self.emit({"process": old, "type": "ok", "f": "on_partitions_revoked", "value": [[TOPIC, p]]})
        self.owner[p] = to
        self.pos[(to, p)] = offset
        self.emit_assigned(old)
        self.emit_assigned(to)

    def key_callback(self, f: str, p: int) -> None:
        self.emit({"process": self.owner[p], "type": "ok", "f": f, "value": [[TOPIC, p]]})

    def move_key(self) -> None:
        """KIP-253's move of a key, done right: everything sent to its old partition is delivered,
        then that partition's consumer reports key-revoked and the new one's key-assigned."""
        key = f"k{self.rng.randrange(self.keys)}"
        old = self.home[key]
        new = self.rng.choice([p for p in range(self.partitions) if p != old])
        self.drain(self.owner[old])
        self.key_callback(KEY_REVOKED, old)
        self.key_callback(KEY_ASSIGNED, new)
        self.home[key] = new

    def nemesis(self) -> None:
        if self.window is None:
            self.windows += 1
            self.window = self.windows
            f = "start"
        else:
            f = "stop"
        self.emit({"process": "nemesis", "type": "info", "f": f,
                   "value": {"fault": "partition", "target": "random-broker", "params": {}, "window": self.window}})
        if f == "stop":
            self.window = None

    def read_committed(self, gone: int | None = None) -> None:
        """The watcher's read: each partition's furthest position so far (-1: none), partition `gone`'s as -1."""
        for p in range(self.partitions):
            self.committed[p] = max(self.committed.get(p, -1), self.pos.get((self.owner[p], p), -1))
        offsets = [[p, -1 if p == gone else o] for p, o in sorted(self.committed.items())]
        self.emit({"process": self.watcher, "type": "invoke", "f": "committed", "topic": TOPIC}, gap_ns=READ_GAP_NS)
        self.emit({"process": self.watcher, "type": "ok", "f": "committed", "topic": TOPIC,
                   "value": {"group": GROUP, "offsets": offsets}}, gap_ns=READ_GAP_NS)

    def step(self) -> None:
        if self.count // READ_EVERY > self.reads:
            self.reads = self.count // READ_EVERY
            self.read_committed()
        r = self.rng.random()
        if r < 0.0005:
            self.nemesis()
        elif r < 0.0025:
            self.move_key()
        elif r < 0.6:
            k = self.rng.randrange(self.keys)
            producer = self.producers[k % len(self.producers)] if self.rng.random() < 0.5 else \
                self.rng.choice(self.producers)
            key = f"k{k}"
            s = self.rng.random()
            if s < 0.01:
                self.send(producer, key, self.home[key], "info", written=s < 0.005)
            elif s < 0.015:
                self.send(producer, key, self.home[key], "fail", written=False)
            else:
                self.send(producer, key, self.home[key])
        else:
            self.poll(self.rng.choice(self.consumers), limit=self.rng.randint(1, 50))

    def finish(self, at_end: list[str]) -> None:
        if self.window is not None:
            self.nemesis()
        self.drain(*self.consumers)
        last = self.partitions - 1
        self.emit({"process": "admin", "type": "ok", "f": "partition-mode", "topic": TOPIC, "partition": last,
                   "value": {"mode": "ReadOnly"}})
        # KIP-694 done right: a key whose partition went ReadOnly goes elsewhere (the evidence the
        # write-to-readonly check needs); it was delivered in order, so key-order has nothing to say
        key = next((k for k, home in self.home.items() if home == last), None)
        if key is not None:
            self.drain(*self.consumers)
            self.key_callback(KEY_REVOKED, last)
            self.key_callback(KEY_ASSIGNED, 0)
            self.home[key] = 0
            self.send(self.producers[0], key, 0)
            self.drain(self.owner[0])
        self.compaction(keep_old="moved-value-kept" in at_end)
        for kind in at_end:
            if kind != "moved-value-kept":
                getattr(self, "plant_" + kind.replace("-", "_"))()
        self.restore()

    def compaction(self, keep_old: bool) -> None:
        """A key moves from partition 1 to 2 (KIP-253's move, done right) and is written there twice;
        after a pause two records of one key on partition 1 show the cleaner passed it after the
        move. With `keep_old`, a second moved key whose old value the restore read still finds."""
        old, new = 1, 2
        for kind in ("moved", "kept")[:1 + keep_old]:
            key = self.fresh_key(kind)
            self.send(self.producers[0], key, old)
            self.drain(self.owner[old])
            self.key_callback(KEY_REVOKED, old)
            self.key_callback(KEY_ASSIGNED, new)
            for _ in range(2):
                self.send(self.producers[0], key, new)
            self.drain(self.owner[new])
            if kind == "kept":
                self.kept_old.add(key)
        self.t += COMPACTION_PAUSE_NS
        filler = self.fresh_key("superseded")
        for _ in range(2):
            self.send(self.producers[0], filler, old)
        self.drain(self.owner[old])

    def restore(self) -> None:
        """The topic read back from its start: what compaction and §9's tombstones leave."""
        for p, log in enumerate(self.logs):
            latest = {k: o for o, (k, _v) in enumerate(log)}
            keep = {o for k, o in latest.items() if self.last_partition.get(k) == p or k in self.kept_old}
            for o in sorted(keep | ({len(log) - 1} if log else set())):
                self.emit({"process": RESTORE_PROCESS, "type": "ok", "f": "restore", "topic": TOPIC, "partition": p,
                           "offset": o, "key": log[o][0], "value": log[o][1]})

    # --- plants --------------------------------------------------------------------------------
    def _other(self, c: int) -> int:
        return next(x for x in self.consumers if x != c)

    def plant_lost_write(self) -> None:
        p = 0
        c = self.owner[p]
        self.drain(c)
        lost = self.send(self.producers[0], self.fresh_key("lost"), p)
        self.send(self.producers[0], self.fresh_key("after-lost"), p)
        self.emit_assigned(c)  # a rebalance that resumes past the lost record
        self.pos[(c, p)] = lost + 1
        self.poll(c)

    def plant_unseen(self) -> None:
        self.send(self.producers[0], self.fresh_key("unseen"), 0)

    def plant_duplicate(self) -> None:
        self.send(self.producers[-1], self.fresh_key("dup"), 1, copies=2)

    def _truncate(self, p: int) -> tuple[int, int]:
        """An indeterminate send read by p's consumer, then cut from the log and replaced by an acked one."""
        c = self.owner[p]
        self.drain(c)
        o = self.send(self.producers[0], self.fresh_key("gone"), p, "info")
        self.poll(c)
        del self.logs[p][o:]
        self.epochs[p] += 1
        self.send(self.producers[-1], self.fresh_key("replaced"), p)
        return c, o

    def plant_inconsistent_offsets(self) -> None:
        p = 1
        c, o = self._truncate(p)
        self.emit({"process": c, "type": "ok", "f": "truncation-detected", "topic": TOPIC, "partition": p,
                   "offset": o, "value": {"fetch_offset": o + 1, "divergence_offset": o},
                   "error": f"log truncation detected at offset {o}"})
        self.pos[(c, p)] = o
        self.poll(c)

    def plant_truncation_undetected(self) -> None:
        p = 2
        c, o = self._truncate(p)
        self.send(self.producers[-1], self.fresh_key("after-replaced"), p)
        self.poll(c)  # it goes on from its position, past the replaced record, which nobody reads again

    def plant_poll_skip(self) -> None:
        p = 3
        c = self.owner[p]
        self.drain(c)
        self.send(self.producers[0], self.fresh_key("before-skip"), p)
        self.poll(c)
        skipped = self.send(self.producers[0], self.fresh_key("skipped"), p)
        self.send(self.producers[0], self.fresh_key("after-skip"), p)
        self.pos[(c, p)] = skipped + 1
        self.poll(c)
        self.move(p, self._other(c), skipped)
        self.poll(self.owner[p])

    def plant_nonmonotonic_poll(self) -> None:
        p = 0
        c = self.owner[p]
        self.drain(c)
        first = self.send(self.producers[0], self.fresh_key("reread"), p)
        self.send(self.producers[0], self.fresh_key("reread"), p)
        self.poll(c)
        self.pos[(c, p)] = first + 1
        self.poll(c)

    def plant_nonmonotonic_send(self) -> None:
        p, producer = 1, self.producers[0]
        a = self.invoke_send(producer, self.fresh_key("reordered"))
        b = self.invoke_send(producer, self.fresh_key("reordered"))
        ob = self.write(p, b)
        oa = self.write(p, a)
        self.complete(a, p, oa)
        self.complete(b, p, ob)

    def plant_key_order(self) -> None:
        p1 = 0
        p2 = next(p for p in range(self.partitions) if self.owner[p] != self.owner[p1])
        self.drain(self.owner[p1], self.owner[p2])
        key, producer = self.fresh_key("moved"), self.producers[0]
        self.send(producer, key, p1)
        self.send(producer, key, p2)
        self.poll(self.owner[p2])
        self.poll(self.owner[p1])

    def plant_key_callbacks(self) -> None:
        p1 = 0
        p2 = next(p for p in range(self.partitions) if self.owner[p] != self.owner[p1])
        for callbacks in ((), (KEY_ASSIGNED, KEY_REVOKED)):
            key, producer = self.fresh_key("unannounced"), self.producers[0]
            self.send(producer, key, p1)
            self.drain(self.owner[p1])
            for f in callbacks:  # the wrong order: assigned before revoked
                self.key_callback(f, p2 if f == KEY_ASSIGNED else p1)
            self.send(producer, key, p2)
            self.drain(self.owner[p2])

    def plant_write_to_readonly(self) -> None:
        p = self.partitions - 1
        self.send(self.producers[0], self.fresh_key("late"), p)
        self.drain(self.owner[p])

    def plant_commit_regressed(self) -> None:
        p = max(range(self.partitions), key=lambda q: self.pos.get((self.owner[q], q), -1))
        self.poll(self.owner[p])  # something committed there (a read first sees it, the next sees none)
        self.read_committed()
        self.read_committed(gone=p)

    def plant_coordinator_split(self) -> None:
        self.emit({"process": self.consumers[-1], "type": "ok", "f": "coordinator",
                   "value": {"group": GROUP, "partition": 12, "node": 2}})
