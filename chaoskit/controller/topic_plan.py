"""Pure decisions of KIP-253 / KIP-694 / KAFKA-20029 for one topic, from what ZooKeeper holds.

Every function takes the topic's assignment znode and its partition state znodes and says what
still has to be written, so the controller can run them again after any crash: a successor that
reads a half-done change gets exactly the remaining steps (docs/internals.md §5).

The invariants the topic znode and states keep:
- partitions below `undeleted_partition_count` (U) are the ones producers use; partitions at or
  above U are marked for deletion (mode ReadOnly, then None) or about to be;
- an expansion raises U with the assignment (CreatePartitions writes both); each partition it
  creates gets `leaderEpochAfterCreation` = the epochs of the partitions that existed before it;
- a deletion lowers U; each marked partition gets `leaderEpochBeforeDeletion` = the epochs of the
  partitions below U;
- a partition named in any such map has a leader epoch above the recorded one once the change is
  done (the "bump"), so every message after it was produced with the new count.
"""
from __future__ import annotations

from collections.abc import Mapping

from chaoskit.protocol.topics import COORDINATOR_TOPICS
from chaoskit.protocol.zk_layout import PartitionState, TopicAssignment

States = Mapping[int, PartitionState]


def is_expansion(assignment: TopicAssignment, states: States) -> bool:
    """Some partitions have states and some have none: partitions were added to a live topic."""
    have = [p for p in assignment.partitions if p in states]
    return bool(have) and len(have) < len(assignment.partitions)


def refused_internal_expansion(topic: str, assignment: TopicAssignment, states: States,
                               allow_internal_increase: bool) -> TopicAssignment | None:
    """The assignment without its new partitions when the guardrail refuses them, else None."""
    if allow_internal_increase or topic not in COORDINATOR_TOPICS or not is_expansion(assignment, states):
        return None
    kept = {p: r for p, r in assignment.partitions.items() if p in states}
    return assignment.evolve(partitions=kept, undeleted_partition_count=(
        None if assignment.undeleted_partition_count is None else len(kept)))


def fixed_counts(assignment: TopicAssignment, states: States) -> TopicAssignment | None:
    """The assignment with KIP-253's counts filled in, or None when they are right.

    A topic without `initial_partition_count` gets the number of partitions that existed before any
    pending expansion (those with states, or all of them for a new topic); one without
    `undeleted_partition_count` gets its whole partition count. Partitions at or above U that have
    no state yet were added by a writer that did not raise U (a stock tool): U covers them.
    """
    existing = sorted(p for p in assignment.partitions if p in states)
    changes: dict[str, int] = {}
    if assignment.initial_partition_count is None:
        changes["initial_partition_count"] = len(existing) or len(assignment.partitions)
    undeleted = assignment.undeleted_partition_count
    if undeleted is None:
        changes["undeleted_partition_count"] = len(assignment.partitions)
    else:
        above = [p for p in assignment.partitions if p >= undeleted]
        if above and not any(p in states for p in above):
            changes["undeleted_partition_count"] = max(assignment.partitions) + 1
    return assignment.evolve(**changes) if changes else None


def _unbumped(states: States, epochs: Mapping[int, int]) -> bool:
    return any(p in states and states[p].leader_epoch <= e for p, e in epochs.items())


def expansion_epochs(assignment: TopicAssignment, states: States) -> dict[int, int]:
    """`leaderEpochAfterCreation` for the partitions an expansion still has to create.

    When an earlier controller created some of them but did not finish bumping the older
    partitions, the rest join that same expansion and get the same map; otherwise the map is
    every existing partition's current leader epoch.
    """
    for s in states.values():
        if s.after_creation and _unbumped(states, s.after_creation):
            return dict(s.after_creation)
    return {p: states[p].leader_epoch for p in sorted(assignment.partitions) if p in states}


def partitions_to_create(assignment: TopicAssignment, states: States) -> list[int]:
    """Partitions of an expansion with no state yet (a new topic's are created as usual). Those at
    or above U too: a shrink that came before the expansion was finished marks them next."""
    if not is_expansion(assignment, states):
        return []
    return sorted(p for p in assignment.partitions if p not in states)


def partitions_to_mark(assignment: TopicAssignment, states: States) -> list[int]:
    """Partitions at or above U that are still ReadWrite: a deletion not carried out yet."""
    return sorted(p for p in assignment.partitions
                  if p >= assignment.undeleted and p in states and not states[p].marked_for_deletion)


def deletion_epochs(assignment: TopicAssignment, states: States) -> dict[int, int]:
    """`leaderEpochBeforeDeletion` for newly marked partitions: the epochs of the partitions below U."""
    return {p: states[p].leader_epoch for p in sorted(assignment.partitions)
            if p < assignment.undeleted and p in states}


def partitions_to_bump(states: States) -> list[int]:
    """Partitions some epoch map names at an epoch they have not yet moved past."""
    due: set[int] = set()
    for s in states.values():
        for epochs in (s.after_creation, s.before_deletion if s.marked_for_deletion else {}):
            due.update(p for p, e in epochs.items() if p in states and states[p].leader_epoch <= e)
    return sorted(due)


def marked(assignment: TopicAssignment, states: States) -> list[int]:
    """Partitions marked for deletion (ReadOnly or None), ascending."""
    return sorted(p for p in assignment.partitions if p in states and states[p].marked_for_deletion)
