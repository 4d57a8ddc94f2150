"""Target specs: which node a fault hits, written as text in schedules and ops.

A spec names a *role*, resolved to a concrete node only when the fault starts
(the leader of a partition moves during a run). The grammar:

==========================  ====================================================
``leader-of:<topic>/<p>``   the broker leading partition p of topic
``follower-of:<topic>/<p>`` a follower of that partition (chosen with the window's ``pick``)
``active-controller``       the controller holding the ``/controller`` znode
``random-broker``           any live broker (chosen with the window's ``pick``)
``broker:<id>``             one broker by id
``coordinator``             the broker coordinating the run's consumer group (the leader of its
                            ``__consumer_offsets`` partition): a fault on it moves the coordinator
``client``                  the workload's clients (their links to the cluster)
``storage``                 the storage service of a broker that keeps its data apart (tansu's
                            PostgreSQL): its node, and its links from every broker
==========================  ====================================================
"""
from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("leader-of", "follower-of", "active-controller", "random-broker", "broker", "coordinator", "client",
         "storage")
GRAMMAR = (
    "leader-of:<topic>/<partition>, follower-of:<topic>/<partition>, "
    "active-controller, random-broker, broker:<id>, coordinator, client, storage"
)
# Kafka's legal topic names: 1-249 of [a-zA-Z0-9._-]
_TOPIC_PARTITION = re.compile(r"([A-Za-z0-9._-]{1,249})/(\d+)")


class TargetSpecError(ValueError):
    """A target spec that does not follow the grammar; the message says which part is wrong."""


@dataclass(frozen=True)
class Target:
    """A parsed target spec; ``str()`` gives back the canonical text."""

    kind: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None

    def __str__(self) -> str:
        if self.topic is not None:
            return f"{self.kind}:{self.topic}/{self.partition}"
        if self.broker is not None:
            return f"{self.kind}:{self.broker}"
        return self.kind


def parse_target(text: str) -> Target:
    """Parse a target spec, or raise TargetSpecError naming the problem and the grammar."""
    if not isinstance(text, str):
        raise TargetSpecError(f"a target spec is a string, got {type(text).__name__} {text!r}; expected one of {GRAMMAR}")
    kind, sep, arg = text.partition(":")
    if kind not in KINDS:
        raise TargetSpecError(f"unknown target kind {kind!r} in {text!r}; expected one of {GRAMMAR}")
    if kind in ("leader-of", "follower-of"):
        match = _TOPIC_PARTITION.fullmatch(arg)
        if not match:
            raise TargetSpecError(f"{text!r}: {kind} needs <topic>/<partition>, e.g. {kind}:orders/0")
        return Target(kind, topic=match[1], partition=int(match[2]))
    if kind == "broker":
        if not arg.isdigit():
            raise TargetSpecError(f"{text!r}: broker needs a numeric id, e.g. broker:1")
        return Target(kind, broker=int(arg))
    if sep:
        raise TargetSpecError(f"{text!r}: {kind} takes no argument; write just {kind!r}")
    return Target(kind)
