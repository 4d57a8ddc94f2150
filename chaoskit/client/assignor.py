"""KIP-253's assignment (step 6): split each topic's partitions into undeleted and marked for
deletion and balance each list over the members separately, so a member does not end up with
only drained-out marked partitions while others take all the new data.

The KIP applies "the user-defined assignment algorithm" to the two lists separately: give the
consumer a `partition_assignor` (an `Assignor`: {member: topics}, {topic: partitions} -> {member:
[(topic, partition)]}) and it is called once per list and its answers merged; its result is checked
(every partition once, to a member subscribed to its topic). Without one, each list goes
round-robin over the members subscribed to its topic (sorted member ids), the marked list
continuing where the undeleted one stopped, so counts differ by at most one per list.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

PROTOCOL_NAME = "kip253-roundrobin"
Assignor = Callable[[Mapping[str, Sequence[str]], Mapping[str, Sequence[int]]], Mapping[str, Iterable[tuple[str, int]]]]


def protocol_name(user: Assignor | None) -> str:
    """The group protocol the members announce: every member of a group must use the same assignor."""
    if user is None:
        return PROTOCOL_NAME
    return f"kip253-{getattr(user, 'name', None) or getattr(user, '__name__', type(user).__name__)}"


def assign(subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, tuple[Sequence[int], Sequence[int]]],
           user: Assignor | None = None) -> dict[str, list[tuple[str, int]]]:
    """{member: [(topic, partition), ...]} from {member: topics} and {topic: (undeleted, marked)}."""
    if user is not None:
        return _each_list(subscriptions, partitions, user)
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


def _each_list(subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, tuple[Sequence[int], Sequence[int]]],
               user: Assignor) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in subscriptions}
    for which, label in ((0, "undeleted"), (1, "marked for deletion")):
        lists = {t: sorted(split[which]) for t, split in partitions.items() if split[which]
                 and any(t in topics for topics in subscriptions.values())}
        if not lists:
            continue
        given = {m: list(tps) for m, tps in user(subscriptions, lists).items()}
        _check(given, subscriptions, lists, label)
        for m, tps in given.items():
            out[m].extend(tps)
    return {m: sorted(tps) for m, tps in out.items()}


def _check(given: Mapping[str, list[tuple[str, int]]], subscriptions: Mapping[str, Sequence[str]],
           lists: Mapping[str, Sequence[int]], label: str) -> None:
    """The user's assignor gave each partition of the list once, to a member subscribed to its topic."""
    want = sorted((t, p) for t, ps in lists.items() for p in ps)
    got = sorted(tp for tps in given.values() for tp in tps)
    strangers = sorted(set(given) - set(subscriptions))
    wrong = sorted((m, t) for m, tps in given.items() if m in subscriptions for t, _ in tps if t not in subscriptions[m])
    if got != want or strangers or wrong:
        raise ValueError(f"partition_assignor: for the {label} partitions {dict(lists)} it must give each exactly "
                         f"once to a member subscribed to its topic; it gave {dict(given)}")
