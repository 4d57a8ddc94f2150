"""KIP-253 linear hashing: the partition of a keyed record, and who blocks whom.

Kafka's stock partitioner sends a key to ``hash mod partition_count``, so adding
one partition moves most keys between *existing* partitions and per-key order
breaks. KIP-253 replaces it with linear hashing, driven by two topic fields:

* ``N`` = ``initial_partition_count`` (partitions when the topic was created);
* ``U`` = ``undeleted_partition_count`` (partitions producers may write to).

Definitions (KIP-253 "Changes in how producer constructs ProduceRequest"):

* ``h = murmur2(key) & 0x7fffffff`` -- Kafka's hash, made non-negative;
* ``L`` = the largest integer with ``N * 2**L <= U`` (the *level*), requires ``U >= N``;
* ``S = U - N * 2**L`` (the *split pointer*): buckets ``0 .. S-1`` of level ``L``
  have already been split and use the next level;
* ``p = h mod (N * 2**L)``; if ``p < S`` then ``p = h mod (N * 2**(L+1))``.

The result is always in ``[0, U)``. Growing ``U`` by one splits exactly bucket
``S``: its keys either stay or move to the new partition ``U``; no other key
moves. So every partition ``p >= N`` has one *split parent*::

    parent(p) = p - N * 2**level(p),   level(p) = largest l with N * 2**l <= p

and shrinking ``U`` by one is the exact inverse (partition ``U - 1`` hands its
keys back to its parent). Chaining parents answers the consumer's questions:

* expansion (KIP step 8.4.2): a new partition ``p >= prior`` blocks on exactly
  one existing partition, the first ancestor of ``p`` below ``prior`` (the count
  before the expansion) -- :func:`expansion_blocker`;
* deletion (step 8.5.1): a partition ``p`` marked for deletion (``p >= U``)
  hands its keys to exactly one undeleted partition, its first ancestor below
  ``U`` -- :func:`deletion_target`. Conversely an undeleted partition must drain
  the marked partitions whose keys come to it -- :func:`deletion_blockers`.
  A partition has at most one direct child per level, hence KIP-253's
  ``O(log n)``; a shrink across several levels at once also brings
  grandchildren, and the function returns that exact set.

Worked example, ``N = 3``:

* ``U = 5``: ``L = 0`` (3 <= 5 < 6), ``S = 2``. Buckets 0 and 1 are split
  (``h mod 6``), bucket 2 is not (``h mod 3``). ``h = 10``: 10 mod 3 = 1 < 2, so
  10 mod 6 = **4**. ``h = 11``: 11 mod 3 = 2 >= 2, so **2**.
* ``U = 6``: ``L = 1``, ``S = 0``: everything is ``h mod 6``. ``h = 11`` moves to
  **5**, taken from bucket 2 -- ``parent(5) = 5 - 3 = 2``. ``h = 10`` stays on 4.
* ``U = 7``: ``S = 1``, bucket 0 splits into 0 and 6 (``h mod 12``);
  ``parent(6) = 6 - 6 = 0``, ``parent(7) = 7 - 6 = 1``.
* Expanding 3 -> 7 in one step: partition 6 blocks on 0, 5 on 2, 4 on 1, 3 on 0.
* Shrinking 7 -> 5 marks 5 and 6: 6's keys go to 0, 5's to 2;
  ``deletion_blockers(0) = [6]``, ``deletion_blockers(2) = [5]``, partition 1 waits
  on nothing.

:func:`modulo_partition` is the unpatched (stock) partitioner, for comparison.
"""
from __future__ import annotations

from kafka.partitioner.default import murmur2

_POSITIVE = 0x7FFFFFFF


def positive_hash(key: bytes) -> int:
    """Kafka's murmur2 of the serialized key, masked to a non-negative int."""
    if key is None:
        raise ValueError("linear hashing places keyed records only; an unkeyed record (key=None) has no hash")
    return murmur2(key) & _POSITIVE


def modulo_partition(key: bytes, count: int) -> int:
    """The stock partitioner for a keyed record: ``hash mod count`` (kafka-python's DefaultPartitioner)."""
    if count < 1:
        raise ValueError(f"partition count must be >= 1, got {count}")
    return positive_hash(key) % count


def _check_counts(initial: int, undeleted: int) -> None:
    if initial < 1:
        raise ValueError(f"initial_partition_count must be >= 1, got {initial}")
    if undeleted < initial:
        raise ValueError(
            f"undeleted_partition_count ({undeleted}) must be >= initial_partition_count ({initial}): "
            "KIP-253 never deletes below the initial count"
        )


def level(initial: int, undeleted: int) -> int:
    """``L``: the largest integer with ``initial * 2**L <= undeleted``."""
    _check_counts(initial, undeleted)
    return (undeleted // initial).bit_length() - 1


def split_pointer(initial: int, undeleted: int) -> int:
    """``S``: how many buckets of level ``L`` have already been split."""
    return undeleted - (initial << level(initial, undeleted))


def partition_for_hash(h: int, initial: int, undeleted: int) -> int:
    """The partition of a non-negative hash under linear hashing."""
    if h < 0:
        raise ValueError(f"hash must be non-negative (mask it with 0x7fffffff), got {h}")
    size = initial << level(initial, undeleted)
    p = h % size
    if p < undeleted - size:
        p = h % (size * 2)
    return p


def linear_partition(key: bytes, initial: int, undeleted: int) -> int:
    """The partition a KIP-253 producer sends a keyed record to."""
    return partition_for_hash(positive_hash(key), initial, undeleted)


def split_parent(p: int, initial: int) -> int | None:
    """The partition ``p`` was split off from; None for an initial partition (``p < initial``)."""
    if initial < 1 or p < 0:
        raise ValueError(f"need initial >= 1 and p >= 0, got initial={initial}, p={p}")
    if p < initial:
        return None
    return p - (initial << level(initial, p))


def owner_among(p: int, initial: int, count: int) -> int:
    """The partition in ``[0, count)`` that holds ``p``'s keys while only ``count`` are undeleted.

    That is ``p`` itself when ``p < count``, else its first split ancestor below ``count``.
    """
    _check_counts(initial, count)
    while p >= count:
        p = split_parent(p, initial)  # never None here: p >= count >= initial
    return p


def expansion_blocker(p: int, initial: int, prior: int) -> int:
    """The one existing partition a new partition ``p`` blocks on after expanding from ``prior``.

    ``prior`` is the partition count before the expansion (the keys of
    ``leaderEpochAfterCreation``); ``p`` must be a partition that expansion created.
    """
    if p < prior:
        raise ValueError(f"partition {p} existed before the expansion from {prior}; it blocks on nothing")
    return owner_among(p, initial, prior)


def deletion_target(p: int, initial: int, undeleted: int) -> int:
    """The undeleted partition that receives the keys of ``p``, which is marked for deletion."""
    if p < undeleted:
        raise ValueError(f"partition {p} is below undeleted_partition_count {undeleted}: it is not marked for deletion")
    return owner_among(p, initial, undeleted)


def deletion_blockers(p: int, initial: int, undeleted: int, total: int) -> list[int]:
    """The marked partitions (in ``[undeleted, total)``) whose keys move to undeleted ``p``, ascending.

    ``p`` must not deliver records produced after the shrink until these are drained.
    """
    _check_counts(initial, undeleted)
    if not 0 <= p < undeleted:
        raise ValueError(f"partition {p} is not an undeleted partition of [0, {undeleted})")
    found: list[int] = []
    frontier = [p]
    while frontier:
        parent = frontier.pop()
        # children of `parent`: parent + N*2**l for every level l whose buckets start above it
        step = initial
        while step <= parent:
            step *= 2
        while parent + step < total:
            child = parent + step
            if child >= undeleted:  # an undeleted child keeps its own descendants' keys
                found.append(child)
                frontier.append(child)
            step *= 2
    return sorted(found)
