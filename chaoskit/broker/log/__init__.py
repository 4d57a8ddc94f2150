"""A partition's log on disk: segments with sparse offset indexes, the leader-epoch checkpoint and
the log-start-offset checkpoint, with recovery after a crash (docs/internals.md §4)."""
from chaoskit.broker.log.epochs import EpochEntry, LeaderEpochCache
from chaoskit.broker.log.partition_log import InvalidAppend, OffsetOutOfRange, PartitionLog
from chaoskit.broker.log.segment import Damage

__all__ = ["PartitionLog", "OffsetOutOfRange", "InvalidAppend", "LeaderEpochCache", "EpochEntry", "Damage"]
