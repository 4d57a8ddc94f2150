"""The checks by name (DESIGN.md §7): what each means, its report category, and its two engines.

Declarative: each entry names the functions that implement it (`module:function`), imported when
the check runs. `needs` is the op kinds (f) a history must hold for the check to apply: a check
asked for by name whose ops are absent is "unknown", never a vacuous pass.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    category: str  # the Allure category its failures are filed under
    needs: frozenset[str]
    local: str  # "module:function" over local_tables.Tables
    spark: str  # "module:function" over spark_checks.SparkTables


def _kafka(name: str, description: str, category: str, *needs: str) -> Check:
    fn = name.replace("-", "_")
    return Check(name, description, category, frozenset(needs), f"chaoskit.checkers.local_checks:{fn}",
                 f"chaoskit.checkers.spark_checks:{fn}")


KAFKA_CHECKS: tuple[Check, ...] = (
    _kafka("lost-write", "an acknowledged write was never read although later offsets of its partition were",
           "Lost data", "send", "poll"),
    _kafka("unseen", "an acknowledged write was never read, and nothing after it in its partition was either",
           "Lost data", "send", "poll"),
    _kafka("duplicate", "one value was written or read at more than one offset", "Duplicates", "send", "poll"),
    _kafka("inconsistent-offsets", "one offset of a partition held different values", "Divergent logs",
           "send", "poll"),
    _kafka("poll-skip", "a consumer's next record of a partition jumped over offsets known to exist, without a "
           "rebalance", "Consumer order", "poll"),
    _kafka("nonmonotonic-poll", "a consumer read an offset of a partition not greater than the one before, "
           "without a rebalance", "Consumer order", "poll"),
    _kafka("nonmonotonic-send", "a producer's later send to a partition got an offset not greater than its "
           "earlier one", "Producer order", "send"),
    _kafka("key-order", "of two records of one key from one producer, the later was delivered before the "
           "earlier (KIP-253, across partitions and consumers), or, where the client records key callbacks, "
           "delivered from another partition without key-revoked then key-assigned between the two",
           "Key order (KIP-253)", "send", "poll"),
    _kafka("truncation-undetected", "a consumer read a record whose offset later held other content, and "
           "reported no truncation at or before it (KIP-320)", "Truncation (KIP-320)", "send", "poll"),
    _kafka("write-to-readonly", "a write invoked after its partition became ReadOnly/None was acknowledged "
           "(KIP-694)", "Partition reduction (KIP-694)", "send", "partition-mode"),
    _kafka("coordinator-split", "one consumer group was served by two coordinator partitions (KAFKA-20029 "
           "guardrail)", "Coordinator (KAFKA-20029)", "coordinator"),
)

# the linearizability checker lives in chaoskit.checkers.linear (imported lazily: unknown when absent)
LINEARIZABLE = Check("linearizable", "the history has a legal sequential order consistent with real time "
                     "(Wing-Gong search with Lowe's memoization)", "Linearizability", frozenset(),
                     "chaoskit.checkers.linear:check", "chaoskit.checkers.linear:check")

CHECKS: dict[str, Check] = {c.name: c for c in (*KAFKA_CHECKS, LINEARIZABLE)}
MODELS = ("kafka", "cas-register", "kv")


def lookup(names: list[str]) -> list[Check]:
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"no check named {', '.join(map(repr, unknown))}; the checks are {', '.join(CHECKS)}")
    return [CHECKS[n] for n in names]
