"""What DescribeConfigs says about a topic's or this broker's configs, as Apache Kafka says it.

A topic config's value is the topic's override (source TOPIC_CONFIG) or else the broker-level value
it falls back to: a key of our broker's config file (STATIC_BROKER_CONFIG when the file sets it,
else DEFAULT_CONFIG) or Kafka's default under Kafka's broker-level name (DEFAULT_CONFIG). Synonyms
list that chain, override first, as Kafka's ConfigHelper does. `enable.ordered.delivery` (KIP-253)
has no broker-level synonym: the broker's `ordered.delivery.enable` is the cluster's switch for the
proposal, not a default for the topic config, so the topic's value is true unless the topic says false.
Only the topic configs the broker accepts (topic_admin.TOPIC_CONFIGS) are listed.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chaoskit.broker.config import SPEC, BrokerConfig

# DescribeConfigsResponse ConfigSource and ConfigType codes (Kafka's ConfigEntry)
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7
LONG_MAX = str(2**63 - 1)


@dataclass(frozen=True)
class TopicConfigKey:
    type: int
    default: str  # Kafka's default, used when the broker has no key of its own for it
    broker_name: str  # the broker-level config it falls back to (Kafka's name)
    doc: str
    broker_key: bool = False  # broker_name is a key of our broker's config file


TOPIC_KEYS: dict[str, TopicConfigKey] = {
    "cleanup.policy": TopicConfigKey(LIST, "delete", "log.cleanup.policy", "delete, compact or both",
                                     broker_key=True),
    "compression.type": TopicConfigKey(STRING, "producer", "compression.type", "the topic's final compression"),
    "delete.retention.ms": TopicConfigKey(LONG, "86400000", "log.cleaner.delete.retention.ms",
                                          "how long delete tombstones are kept in a compacted topic",
                                          broker_key=True),
    "enable.ordered.delivery": TopicConfigKey(BOOLEAN, "true", "", "KIP-253: producers use linear hashing and "
                                              "consumers the expansion and deletion gates for this topic"),
    "flush.messages": TopicConfigKey(LONG, LONG_MAX, "log.flush.interval.messages", "messages between fsyncs"),
    "flush.ms": TopicConfigKey(LONG, LONG_MAX, "log.flush.interval.ms", "milliseconds between fsyncs"),
    "max.message.bytes": TopicConfigKey(INT, "1048588", "message.max.bytes", "the largest record batch"),
    "message.timestamp.type": TopicConfigKey(STRING, "CreateTime", "log.message.timestamp.type",
                                             "CreateTime or LogAppendTime"),
    "min.compaction.lag.ms": TopicConfigKey(LONG, "0", "log.cleaner.min.compaction.lag.ms",
                                            "the least time a record stays uncompacted", broker_key=True),
    "min.insync.replicas": TopicConfigKey(INT, "1", "min.insync.replicas", "replicas an acks=all write needs",
                                          broker_key=True),
    "retention.bytes": TopicConfigKey(LONG, "-1", "log.retention.bytes", "the most bytes a partition keeps"),
    "retention.ms": TopicConfigKey(LONG, "604800000", "log.retention.ms", "how long a record is kept",
                                   broker_key=True),
    "segment.bytes": TopicConfigKey(INT, "1073741824", "log.segment.bytes", "a log segment's size", broker_key=True),
    "segment.ms": TopicConfigKey(LONG, "604800000", "log.roll.ms", "how long before a segment is rolled"),
    "unclean.leader.election.enable": TopicConfigKey(BOOLEAN, "false", "unclean.leader.election.enable",
                                                     "an out-of-sync replica may be elected", broker_key=True),
}


@dataclass(frozen=True)
class Entry:
    """One config as DescribeConfigs lists it; synonyms are (name, value, source), the entry's own first."""
    name: str
    value: str | None
    source: int
    read_only: bool
    type: int
    doc: str | None
    synonyms: tuple[tuple[str, str | None, int], ...] = ()


def _text(value: Any) -> str | None:
    """A broker config value as the string a config file would hold."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple) and len(value) == 2:
        return f"{value[0]}:{value[1]}"
    if isinstance(value, dict):
        return ",".join(f"{k}:{_text(v)}" for k, v in sorted(value.items()))
    if isinstance(value, frozenset):
        return ",".join(sorted(value))
    return str(value)


def _type(value: Any) -> int:
    return BOOLEAN if isinstance(value, bool) else INT if isinstance(value, int) else STRING


def _broker_synonym(name: str, config: BrokerConfig) -> tuple[str, str | None, int]:
    attr, _parse, default = SPEC[name]
    value = getattr(config, attr)
    return name, _text(value), STATIC_BROKER_CONFIG if name in config.given else DEFAULT_CONFIG


def wanted(keys: Iterable[str] | None, names: Iterable[str]) -> list[str]:
    """The names asked for, in order: every one for null or an empty list (as Kafka), else those known."""
    asked = set(keys or ())
    return [n for n in names if not asked or n in asked]


def topic_entries(overrides: Mapping[str, str], config: BrokerConfig, keys: Iterable[str] | None = None) -> list[Entry]:
    out = []
    for name in wanted(keys, sorted(TOPIC_KEYS)):
        spec = TOPIC_KEYS[name]
        chain = []
        if name in overrides:
            chain.append((name, overrides[name], TOPIC_CONFIG))
        if spec.broker_key:
            chain.append(_broker_synonym(spec.broker_name, config))
        elif spec.broker_name:
            chain.append((spec.broker_name, spec.default, DEFAULT_CONFIG))
        value, source = (chain[0][1], chain[0][2]) if chain else (spec.default, DEFAULT_CONFIG)
        out.append(Entry(name, value, source, False, spec.type, spec.doc, tuple(chain)))
    return out


def broker_entries(config: BrokerConfig, keys: Iterable[str] | None = None) -> list[Entry]:
    """This broker's config keys, all read-only (the broker has no dynamic configs)."""
    out = []
    for name in wanted(keys, sorted(SPEC)):
        synonym = _broker_synonym(name, config)
        out.append(Entry(name, synonym[1], synonym[2], True, _type(getattr(config, SPEC[name][0])), None, (synonym,)))
    return out
