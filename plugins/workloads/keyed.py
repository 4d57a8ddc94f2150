"""The `keyed-sequences` workload: producers write numbered sequences per key, consumers poll.

Processes 0..producers-1 produce, the next `consumers` processes consume (in one group). Each
producer draws its keys from its own generator seeded by (seed, process), so what a producer
sends depends only on the seed and how many ops it has done: never on thread timing. A send's
value is unique and says where it belongs: `[producer, "k<key>", seq]` (seq counts that
producer's sends of that key from 0), which is what the key-order and lost-write checks read.
Producers pace themselves at `rate` sends per second each. Consumers poll as fast as they can,
or at most `poll_rate` times a second each: a slow consumer group, whose lag is where reordering
across partitions shows (records of a key waiting in one partition while later ones arrive in
another). With `consumer_start_s` the group joins late, as a group started after an outage
would, and finds a backlog.

With `topics` (a list of names) the workload runs on several topics at once, each with its own
processes: producer i writes to topics[i mod n], consumer j reads topics[j mod n] (one group).

With `watchers` (default none), that many more processes ask the broker for the consumer group's
committed offsets of their topic, `watch_rate` times a second each (op `committed`, answered by
the client through Kafka's Admin API): a committed offset that goes back, or vanishes, is the
`commit-regressed` check's witness.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from chaoskit.history.schema import Op
from chaoskit.roles import PENDING, Pending

PRODUCER, CONSUMER, WATCHER = "producer", "consumer", "watcher"


@dataclass
class KeyedSequences:
    topic: str = "orders"
    topics: list[str] | None = None  # several topics, each with its own producers and consumers
    producers: int = 4
    consumers: int = 3
    keys: int = 200
    rate: float = 50.0  # sends per second per producer
    poll_rate: float | None = None  # polls per second per consumer; None: no limit
    consumer_start_s: float = 0.0  # consumers join this late: a backlog waits for them
    watchers: int = 0  # processes reading the group's committed offsets
    watch_rate: float = 2.0  # committed-offset reads per second per watcher
    duration_s: float = 30.0
    seed: int = 0
    _rngs: dict[int, random.Random] = field(default_factory=dict, init=False, repr=False)
    _seqs: dict[tuple[int, int], int] = field(default_factory=dict, init=False, repr=False)
    _done: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _roles: dict[str, range] = field(default_factory=dict, init=False, repr=False)  # each role's processes

    def __post_init__(self) -> None:
        for name in ("producers", "consumers", "keys", "watchers"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (1 if name not in ("consumers", "watchers") else 0):
                raise ValueError(f"keyed-sequences: {name} must be a whole number >= 1, got {value!r}")
        if self.topics is not None and (not self.topics or not all(isinstance(t, str) and t for t in self.topics)):
            raise ValueError(f"keyed-sequences: topics must be a non-empty list of topic names, got {self.topics!r}")
        if self.topics is not None and min(self.producers, self.consumers or len(self.topics)) < len(self.topics):
            raise ValueError(f"keyed-sequences: {len(self.topics)} topics need at least as many producers and "
                             f"consumers, got {self.producers} and {self.consumers}")
        if self.rate <= 0 or self.duration_s <= 0 or self.watch_rate <= 0 or \
                (self.poll_rate is not None and self.poll_rate <= 0):
            raise ValueError(f"keyed-sequences: rate, poll_rate, watch_rate and duration_s must be > 0, got "
                             f"{self.rate}, {self.poll_rate}, {self.watch_rate}, {self.duration_s}")
        ends = (self.producers, self.producers + self.consumers, self.producers + self.consumers + self.watchers)
        self._roles = {PRODUCER: range(ends[0]), CONSUMER: range(ends[0], ends[1]), WATCHER: range(ends[1], ends[2])}

    @property
    def processes(self) -> dict[str, list[int]]:
        return {role: list(r) for role, r in self._roles.items() if r or role != WATCHER}

    def role(self, process: int) -> str:
        for role, r in self._roles.items():
            if process in r:
                return role
        raise ValueError(f"keyed-sequences has processes 0..{self._roles[WATCHER].stop - 1}, not {process}")

    def topic_of(self, process: int, role: str | None = None) -> str:
        """The topic a process (of `role`, when the caller knows it) works on."""
        if self.topics is None:
            return self.topic
        return self.topics[(process - self._roles[role or self.role(process)].start) % len(self.topics)]

    def op(self, process: int, elapsed_s: float) -> Op | Pending | None:
        if elapsed_s >= self.duration_s:
            return None
        role = self.role(process)
        consumer = role == CONSUMER
        if consumer and elapsed_s < self.consumer_start_s:
            return PENDING
        done = self._done.get(process, 0)
        pace = {PRODUCER: self.rate, CONSUMER: self.poll_rate, WATCHER: self.watch_rate}[role]
        if pace is not None and done >= (elapsed_s - (self.consumer_start_s if consumer else 0)) * pace:
            return PENDING
        self._done[process] = done + 1
        if role != PRODUCER:
            return {"f": "poll" if consumer else "committed", "topic": self.topic_of(process, role)}
        rng = self._rngs.setdefault(process, random.Random(f"{self.seed}/{process}"))
        key = rng.randrange(self.keys)
        seq = self._seqs.get((process, key), 0)
        self._seqs[(process, key)] = seq + 1
        return {"f": "send", "topic": self.topic_of(process, role), "key": f"k{key}",
                "value": [process, f"k{key}", seq]}

    def drain_op(self, process: int) -> Op | None:
        """After the run: consumers read on until the runner has seen every acknowledged send."""
        return {"f": "poll", "topic": self.topic_of(process)} if self.role(process) == CONSUMER else None


def keyed_sequences(**options: Any) -> KeyedSequences:
    return KeyedSequences(**options)
