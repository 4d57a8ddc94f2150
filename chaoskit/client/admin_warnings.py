"""The warnings KIP-694's topic command prints before it changes a topic's partitions.

The three texts are the KIP's, word for word; when each is printed is chaoskit's reading of
"under certain situations" (docs/conformance.md rows 100):
- keyed order: the topic has no KIP-253 counts in Metadata (created without ordered delivery), so a
  key's partition is the stock modulo rule and moves with the count. With the counts, linear
  hashing keeps each key's order across the change and the warning would be false. Whether the
  topic's records carry keys is not looked at (the command cannot know without reading them).
- feature: on a shrink, when the broker does not offer DeletePartitions or a Metadata version that
  carries `mode` (9, where chaoskit's tag starts), or answers TOPIC_DELETION_DISABLED.
- under changes: partitions are still marked for deletion (ReadOnly or None), or an expansion is
  not finished (the undeleted count is above the partitions Metadata shows).
"""
from __future__ import annotations

from chaoskit.client.admin import TopicInfo
from chaoskit.protocol.extensions import MODE_METADATA_VERSION
from chaoskit.protocol.internal import DELETE_PARTITIONS

KEYED = ("WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of "
         "the messages will be affected")
FEATURE = ("WARNING: This feature is only enabled with Metadata version above 10 and delete topic partition "
           "enable turned on")
CHANGING = "WARNING: The topic is currently under changes"

METADATA = 3


def feature_missing(api_versions: dict[int, tuple[int, int]]) -> bool:
    """The broker offers no DeletePartitions, or no Metadata version that carries `mode`."""
    return DELETE_PARTITIONS not in api_versions or api_versions.get(METADATA, (0, -1))[1] < MODE_METADATA_VERSION


def topic_warnings(info: TopicInfo) -> list[str]:
    """The warnings a change of this topic's partitions gets (expand and shrink alike)."""
    out = []
    if info.initial_partition_count is None or info.undeleted_partition_count is None:
        out.append(KEYED)
    if info.marked_for_deletion or (info.undeleted_partition_count or 0) > len(info.partitions):
        out.append(CHANGING)
    return out
