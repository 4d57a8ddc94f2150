"""An error answer for the APIs whose responses carry errors per partition only (Produce at every
version, Fetch before v7, ListOffsets): each partition the request named gets the error, so a
client of an old version reads UNSUPPORTED_VERSION where it looks for errors, not an empty success.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse
from kafka.protocol.producer import ProduceResponse

_FetchTopic = FetchResponse.FetchableTopicResponse
_ProduceTopic = ProduceResponse.TopicProduceResponse
_OffsetsTopic = ListOffsetsResponse.ListOffsetsTopicResponse


def _fetch(request: Any, code: int) -> Any:
    return FetchResponse(throttle_time_ms=0, error_code=code, session_id=0, responses=[
        _FetchTopic(topic=t.topic, topic_id=t.topic_id, partitions=[
            _FetchTopic.PartitionData(partition_index=p.partition, error_code=code, high_watermark=-1,
                                      last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                                      preferred_read_replica=-1, records=None)
            for p in t.partitions]) for t in request.topics])


def _produce(request: Any, code: int) -> Any:
    return ProduceResponse(throttle_time_ms=0, responses=[
        _ProduceTopic(name=t.name, topic_id=t.topic_id, partition_responses=[
            _ProduceTopic.PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1,
                                                   log_append_time_ms=-1, log_start_offset=-1, record_errors=[])
            for p in t.partition_data]) for t in request.topic_data])


def _list_offsets(request: Any, code: int) -> Any:
    return ListOffsetsResponse(throttle_time_ms=0, topics=[
        _OffsetsTopic(name=t.name, partitions=[
            _OffsetsTopic.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=code,
                                                       old_style_offsets=[], timestamp=-1, offset=-1, leader_epoch=-1)
            for p in t.partitions]) for t in request.topics])


_BY_KEY = {0: _produce, 1: _fetch, 2: _list_offsets}


def partition_errors(api_key: int, request: Any, code: int) -> Any | None:
    """The response to `request` (decoded at its version) with `code` on each partition it named;
    None for an API not listed here."""
    build = _BY_KEY.get(api_key)
    return build(request, code) if build is not None else None
