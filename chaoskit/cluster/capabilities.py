"""What a broker under test can do beyond Kafka's wire protocol, by name.

Every Kafka-compatible broker gives faults, clients and checks the same core: nodes to start, stop,
kill, pause and restart, client addresses through the proxies, partition leaders from Metadata and
topic admin through the Admin API. What only some brokers have is a capability, which a suite
(`@pytest.mark.chaos_needs(...)`), a fault (`needs` on its class) or an explore step asks for by
name. A broker that lacks one skips the suite with the reason, never reports it clean.
"""
from __future__ import annotations

from typing import Iterable

ZOOKEEPER = "zookeeper"  # ZooKeeper's view: assignments, registrations, partition state znodes
CONTROLLERS = "controllers"  # controllers apart from the brokers: failover, stale metadata, unclean elections
KIP253 = "kip253"  # partitions marked, drained and removed; the producer's count check
KIP320 = "kip320"  # leader epochs that move, unclean elections, OffsetsForLeaderEpoch fencing
KIP694 = "kip694"  # partition modes (ReadWrite, ReadOnly, ...) and delayed removal
GUARDRAIL = "guardrail"  # KAFKA-20029: internal topics grow only with their configured count
UNPATCHED = "unpatched"  # a profile without the proposals, to show what they fix
MUTATIONS = "mutations"  # elements of the proposals turned off one at a time (chaoskit mutate)
STORAGE = "storage"  # a storage service apart from the brokers (its own node: `storage` targets it)

WORDS = {
    ZOOKEEPER: "a ZooKeeper view of its partitions",
    CONTROLLERS: "controllers apart from its brokers",
    KIP253: "KIP-253 partition marking",
    KIP320: "KIP-320 leader epochs and unclean elections",
    KIP694: "KIP-694 partition modes",
    GUARDRAIL: "KAFKA-20029's guardrail on internal topics",
    UNPATCHED: "an unpatched profile",
    MUTATIONS: "chaoskit's mutations of the proposals",
    STORAGE: "a storage service apart from its brokers",
}
ALL = frozenset(WORDS)
OWN = ALL - {STORAGE}  # chaoskit's own broker keeps its logs itself


def checked(names: Iterable[str]) -> frozenset[str]:
    """`names` as a set; ValueError naming an unknown capability and the known ones."""
    names = frozenset(names)
    unknown = sorted(names - ALL)
    if unknown:
        raise ValueError(f"unknown capability {', '.join(unknown)}; known: {', '.join(sorted(ALL))}")
    return names


def lacking(title: str, has: Iterable[str], needs: Iterable[str]) -> str | None:
    """Why a broker titled `title` cannot run what `needs` these capabilities ("tansu 0.6.0 does not
    implement KIP-253 partition marking"), or None when it can."""
    missing = sorted(checked(needs) - frozenset(has))
    if not missing:
        return None
    return f"{title} does not implement {' or '.join(WORDS[m] for m in missing)}"
