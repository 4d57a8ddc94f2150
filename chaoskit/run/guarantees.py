"""The guarantees the suites test, and what each client claims of them.

A suite names the guarantee it tests (its marker's `guarantee=`). A *client-side* guarantee is a
promise the client makes with the broker's help (KIP-253's per-key order, KIP-320's truncation
detection, KIP-694's respect of partition modes): a client that does not claim it is reported
"not claimed" on the patched profile, with what was seen, never failed for it. A *cluster-side*
guarantee (zombie fencing, one coordinator per group) is the brokers' and controllers' promise:
every client must see it kept on the patched profile.

Each client plugin says what it claims (`claims`, guarantee names) and which library it is
(`library`, a distribution name whose version reports print).
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

CLIENT_SIDE, CLUSTER_SIDE = "client", "cluster"


@dataclass(frozen=True)
class Guarantee:
    name: str
    proposal: str
    promise: str
    side: str
    suites: tuple[str, ...]  # suites/test_<name>.py that test it


GUARANTEES: dict[str, Guarantee] = {g.name: g for g in (
    Guarantee("kip253-key-order", "KIP-253", "a producer's records of one key are delivered in order while "
              "partitions are added and deleted", CLIENT_SIDE, ("kip253_expansion", "kip253_deletion")),
    Guarantee("kip253-compaction", "KIP-253", "a key that moves to a new partition of a compacted topic leaves "
              "none of its old values on the partition it left once compaction has passed it (§9's tombstones)",
              CLIENT_SIDE, ("kip253_compaction",)),
    Guarantee("kip320-truncation-detection", "KIP-320", "a consumer that read records a truncation replaced goes "
              "back to the divergence offset (or says so), never on past them", CLIENT_SIDE, ("kip320_truncation",)),
    Guarantee("kip694-mode-awareness", "KIP-694", "nothing acknowledged is lost and nothing written to a ReadOnly "
              "partition while a topic shrinks", CLIENT_SIDE, ("kip694_reduction",)),
    Guarantee("kip320-zombie-fencing", "KIP-320", "a zombie replica is fenced: no acknowledged write is lost with "
              "clean elections", CLUSTER_SIDE, ("kip320_zombie",)),
    Guarantee("kafka-durability", "Kafka", "an acknowledged (acks=all) write is never lost, across broker kills "
              "and storage faults", CLUSTER_SIDE, ("durability",)),
    Guarantee("kafka-one-log", "Kafka", "one offset holds one record and one record one offset, however many "
              "brokers take writes for a partition", CLUSTER_SIDE, ("shared_log",)),
    Guarantee("kafka-partition-order", "Kafka", "a producer's records of one partition get increasing offsets and a "
              "consumer reads a partition in offset order, skipping nothing", CLUSTER_SIDE, ("partition_order",)),
    Guarantee("kafka-consumer-groups", "Kafka", "a consumer group's committed offset, once the broker answered "
              "it, never goes back or vanishes, and no partition has two owners in the group at once, across "
              "broker and storage restarts", CLUSTER_SIDE, ("group_offsets",)),
    Guarantee("kafka-20029-one-coordinator", "KAFKA-20029", "each consumer group has one coordinator, the "
              "internal topics never grow", CLUSTER_SIDE, ("internal_topic_guardrail",)),
)}


def claims_of(client: Any) -> frozenset[str]:
    """What a client (its plugin class or factory) claims; nothing when it says nothing."""
    return frozenset(getattr(client, "claims", ()))


def library_of(client: Any) -> str:
    """"kafka-python 3.0.12": the client's library and its installed version."""
    name = getattr(client, "library", None) or getattr(client, "name", "?")
    try:
        return f"{name} {version(name)}"
    except PackageNotFoundError:
        return f"{name} (version unknown)"


def expectation(guarantee: str | None, profile: str, claims: frozenset[str]) -> str:
    """What a clean-or-caught claim means for this run: "holds" (patched, claimed or cluster-side:
    must check clean), "not claimed" (patched, a client-side guarantee the client does not claim),
    or "broken" (unpatched: the broker does not keep its side)."""
    if profile != "patched":
        return "broken"
    g = GUARANTEES.get(guarantee or "")
    if g is None or g.side == CLUSTER_SIDE or g.name in claims:
        return "holds"
    return "not claimed"
