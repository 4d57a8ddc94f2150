"""Topic-name rules and the coordinator partition hash: what brokers, the controller and clients
must agree on about topics.

- `legal_topic_name`: Kafka's rule for topic names, which also makes them safe as directory names
  under log.dirs.
- `COORDINATOR_TOPICS`: the internal topics whose keys the broker places by hash mod partition
  count, so adding partitions to them moves keys (KAFKA-20029's guardrail refuses it).
- `ordered_delivery`: a topic's `enable.ordered.delivery` read from its config, one rule for the
  broker, the client and a test's topics.
- `cleanup_policy` / `compacted`: a topic's `cleanup.policy` (else the broker's `log.cleanup.policy`)
  and whether it compacts, one rule for the broker's cleaner and the client's KIP-253 §9 tombstones.
- `java_string_hashcode` / `partition_for`: the group -> `__consumer_offsets` partition, Kafka's
  `Utils.abs(groupId.hashCode()) % partitions`, with Java's String hash over UTF-16 code units and
  Utils.abs mapping Integer.MIN_VALUE to 0.
"""
from __future__ import annotations

import re
import struct

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_INT_MIN = -(2**31)

# KAFKA-20029: topics whose keys are placed by hash mod partition count on the broker side
OFFSETS_TOPIC = "__consumer_offsets"  # the group coordinators' topic
COORDINATOR_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state", "__share_group_state"})
# KIP-253's topic config: false turns the proposal off for that topic (broker count check, client steps)
ORDERED_DELIVERY = "enable.ordered.delivery"


def ordered_delivery(config: dict[str, object]) -> bool:
    """A topic's `enable.ordered.delivery` from its config map: true unless it says false (KIP-253's default)."""
    return str(config.get(ORDERED_DELIVERY) or "true").strip().lower() != "false"


CLEANUP_POLICY = "cleanup.policy"
CLEANUP_POLICIES = frozenset({"delete", "compact"})


def cleanup_policy(config: dict[str, object], default: str = "delete") -> frozenset[str]:
    """A topic's `cleanup.policy` from its config map (`delete`, `compact` or both, comma-separated),
    else `default` (the broker's `log.cleanup.policy`)."""
    value = str(config.get(CLEANUP_POLICY) or default)
    return frozenset(p.strip().lower() for p in value.split(",") if p.strip())


def compacted(config: dict[str, object], default: str = "delete") -> bool:
    """Whether a topic is log compacted: its cleanup.policy contains `compact`."""
    return "compact" in cleanup_policy(config, default)


def legal_topic_name(name: str) -> bool:
    """1-249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    return bool(_LEGAL_NAME.match(name)) and name not in (".", "..")


def java_string_hashcode(s: str) -> int:
    """java.lang.String.hashCode(): 31-polynomial over UTF-16 code units, as a signed 32-bit int."""
    units = s.encode("utf-16-be")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def partition_for(group_id: str, partition_count: int) -> int:
    """The `__consumer_offsets` partition of a group (Kafka's `Utils.abs(groupId.hashCode) % count`)."""
    if partition_count <= 0:
        raise ValueError(f"partition_count must be positive, got {partition_count}")
    h = java_string_hashcode(group_id)
    return (0 if h == _INT_MIN else abs(h)) % partition_count
