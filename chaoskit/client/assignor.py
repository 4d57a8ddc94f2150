"""KIP-253's assignment (step 6): split each topic's partitions into undeleted and marked for
deletion and balance each list over the members separately, so a member does not end up with
only drained-out marked partitions while others take all the new data.

Each list goes round-robin over the members subscribed to its topic (sorted member ids); the
marked list continues where the undeleted one stopped, so counts differ by at most one per list.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

PROTOCOL_NAME = "kip253-roundrobin"


def assign(subscriptions: Mapping[str, Sequence[str]],
           partitions: Mapping[str, tuple[Sequence[int], Sequence[int]]]) -> dict[str, list[tuple[str, int]]]:
    """{member: [(topic, partition), ...]} from {member: topics} and {topic: (undeleted, marked)}."""
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in subscriptions}
    for topic in sorted(partitions):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        undeleted, marked = partitions[topic]
        turn = 0
        for p in [*sorted(undeleted), *sorted(marked)]:
            out[members[turn % len(members)]].append((topic, p))
            turn += 1
    return {m: sorted(tps) for m, tps in out.items()}
