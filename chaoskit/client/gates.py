"""KIP-253 step 8: when a consumer may deliver from a partition whose keys came from, or go to,
another partition.

* ExpansionGate (8.4): a partition P1 created by an expansion starts only once the group's
  position of its one blocker P3 (the partition it was split from, as of the expansion) passed
  the end of P3's leader epoch before P1's creation -- every record of the moved keys that was
  written to P3 before the split has then been consumed.
* DeletionGate (8.5): an undeleted partition P1 that receives the keys of partitions P3 marked
  for deletion delivers offset T only when, for each P3, T lies before the end of P1's epoch
  before the marking (the record was written before the shrink) or the group's position of P3
  reached P3's log end (P3 is drained).

Thresholds come from OffsetsForLeaderEpoch and are only taken once the partition's current
epoch moved past the named one (else the epoch is still open and its end not final). While a
marked partition's threshold is not known, P1 delivers nothing: any offset may lie past it.

`keys_leaving`: the partitions whose keys go elsewhere when their owner loses them (its
key-revoked on a rebalance).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from chaoskit.client.admin import TopicInfo
from chaoskit.client.routing import ordered
from chaoskit.protocol.extensions import PartitionMode


def keys_leaving(owned: Iterable[tuple[str, int]], topics: Mapping[str, TopicInfo]) -> list[tuple[str, int]]:
    """The owned partitions whose keys move to other partitions when this member loses them: in an
    ordered topic, those marked for deletion and those already removed (a partition only leaves
    an ordered topic through a reduction, and can be gone from the metadata before the member's
    rebalance: its keys moved all the same, so its owner must still say key-revoked)."""
    return [(t, p) for t, p in owned if t in topics and ordered(topics[t])
            and ((q := topics[t].partitions.get(p)) is None or q.mode == PartitionMode.READ_ONLY)]


@dataclass
class ExpansionGate:
    blocker: int
    threshold: int  # end offset of the blocker's epoch before the creation

    def open(self, blocker_position: int) -> bool:
        return blocker_position >= self.threshold


@dataclass
class DeletionGate:
    # marked partition -> end offset of P1's epoch before it was marked
    upper: dict[int, int] = field(default_factory=dict)
    drained: set[int] = field(default_factory=set)
    # marked partitions whose keys P1 announced it delivers (on_partition_key_assigned): a marked
    # partition drained or removed before P1 reached its threshold still gets its announcement there
    announced: set[int] = field(default_factory=set)
    waited: set[int] = field(default_factory=set)  # marked partitions it was seen waiting on (reported once)
    # marked partitions whose threshold P1 could not learn yet (its epoch not yet bumped in our
    # metadata, or its leader not answering): until it is known, no offset of P1 is safe to deliver
    unknown: set[int] = field(default_factory=set)

    def limit(self) -> int | None:
        """The first offset P1 may not deliver yet (None: no limit)."""
        if self.unknown:
            return 0
        pending = [u for p, u in self.upper.items() if p not in self.announced]
        return min(pending) if pending else None

    def due(self, position: int) -> set[int] | None:
        """At `position`: the marked partitions to announce now, once all of them are drained
        (None: some are not yet, or nothing is due)."""
        reached = {p for p, u in self.upper.items() if u <= position and p not in self.announced}
        return reached if reached and reached <= self.drained else None

    @property
    def waiting_on(self) -> list[int]:
        return sorted(p for p in self.upper if p not in self.drained)
