"""Mutations: switches that each turn off exactly one element of the proposals in an otherwise
patched system, so a suite can be shown to catch what it exists for (`chaoskit mutate`).

Each names the element, the proposal, the part that implements it (broker, controller or the
ordered client: it reaches that part as its config key or client option `mutations`, a list of
names) and the suites expected to catch it. A mutation is a test of the tests: chaoskit's own
switch, not a Kafka setting; docs/verdicts.md has the table of what each suite catches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

BROKER, CONTROLLER, CLIENT = "broker", "controller", "client"


@dataclass(frozen=True)
class Mutation:
    name: str
    proposal: str
    element: str  # what is turned off, in the proposal's words
    part: str  # broker, controller or client
    suites: tuple[str, ...]  # the suite files (suites/test_<name>.py) expected to catch it


MUTATIONS: dict[str, Mutation] = {m.name: m for m in (
    Mutation("linear-hashing", "KIP-253", "the producer's linear hashing (keys placed by murmur2 modulo the count)",
             CLIENT, ("kip253_expansion",)),
    Mutation("expansion-gate", "KIP-253", "the consumer's wait for a split partition's parent before reading a "
             "new one", CLIENT, ("kip253_expansion",)),
    Mutation("deletion-gate", "KIP-253", "the consumer's wait for a marked partition to drain before reading past "
             "its keys' new partition", CLIENT, ("kip253_deletion",)),
    Mutation("position-exchange", "KIP-253", "the consumers' ConsumerGroupPosition exchange (a gate is judged on "
             "the consumer's own positions only)", CLIENT, ("kip253_expansion", "kip253_deletion")),
    Mutation("truncation-detection", "KIP-320", "the consumer's position validation with OffsetsForLeaderEpoch",
             CLIENT, ("kip320_truncation",)),
    Mutation("fetch-epoch-fencing", "KIP-320", "FENCED_LEADER_EPOCH for a Fetch carrying an older "
             "current_leader_epoch", BROKER, ("kip320_zombie",)),
    Mutation("epoch-end-offsets", "KIP-320", "the leader epochs in OffsetsForLeaderEpoch answers to consumers and in "
             "their Fetch's divergence check (the log end is answered for any epoch)", BROKER,
             ("kip320_truncation",)),
    Mutation("offline-replica-isr", "KIP-320", "an offline replica may not rejoin the ISR", BROKER,
             ("kip320_zombie",)),
    Mutation("readonly-refusal", "KIP-694", "the broker's refusal of a Produce to a ReadOnly or None partition",
             BROKER, ("kip694_reduction",)),
    Mutation("delayed-deletion", "KIP-694", "the delay before a reduced partition is removed (removed at once)",
             CONTROLLER, ("kip694_reduction", "kip253_deletion")),
    Mutation("drained-deletion", "KIP-253", "a marked partition removed only once it is drained (removed at "
             "once)", CONTROLLER, ("kip253_deletion",)),
    Mutation("guardrail", "KAFKA-20029", "the refusal to expand an internal coordinator topic", CONTROLLER,
             ("internal_topic_guardrail",)),
)}


def mutation_names(part: str) -> list[str]:
    """The mutations the part (broker, controller, client) implements."""
    return sorted(n for n, m in MUTATIONS.items() if m.part == part)


def checked(names: Iterable[str], part: str | None = None) -> frozenset[str]:
    """The names as a set, each a known mutation (of `part`, when given); ValueError naming the rest."""
    names = frozenset(names)
    known = {n for n, m in MUTATIONS.items() if part is None or m.part == part}
    unknown = sorted(names - known)
    if unknown:
        where = f" of the {part}" if part else ""
        raise ValueError(f"no mutation{where} named {', '.join(unknown)}; they are {', '.join(sorted(known))}")
    return names
