"""KIP-320's public client types without a cluster: LogTruncationError is an OffsetOutOfRangeError
carrying every truncated partition, and seek refuses what it cannot take in one clear line."""
from __future__ import annotations

import pytest
from kafka import TopicPartition

from chaoskit.client.consumer import OrderedConsumer
from chaoskit.client.truncation import LogTruncationError, OffsetAndMetadata, OffsetOutOfRangeError


def test_log_truncation_error_names_every_partition_and_its_divergence():
    a, b = TopicPartition("t", 0), TopicPartition("t", 3)
    error = LogTruncationError({a: 20, b: 16}, {a: OffsetAndMetadata(10, "", 0), b: OffsetAndMetadata(6, "", 2)})
    assert isinstance(error, OffsetOutOfRangeError)  # caught by code written for the older error, as in Kafka
    assert error.offset_out_of_range_partitions == {a: 20, b: 16}
    assert error.truncation_offsets[b] == OffsetAndMetadata(6, "", 2)
    assert "t-0 at offset 10 below position 20; t-3 at offset 6 below position 16" in str(error)
    assert OffsetAndMetadata(5) == OffsetAndMetadata(5, "", None)  # no epoch: nothing to validate


def test_seek_refuses_bad_offsets_and_two_epochs():
    consumer = OrderedConsumer("127.0.0.1:1")
    with pytest.raises(ValueError, match="offset must be an int >= 0, got -1"):
        consumer.seek(("t", 0), -1)
    with pytest.raises(ValueError, match="not both"):
        consumer.seek(("t", 0), OffsetAndMetadata(1, "", 3), leader_epoch=3)
    with pytest.raises(ValueError, match="t-0 is not assigned"):
        consumer.seek(("t", 0), OffsetAndMetadata(1, "", 3))
