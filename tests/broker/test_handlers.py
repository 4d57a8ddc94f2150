"""The handler table and request checks: every API the registry advertises has a handler, null
arrays where the schema forbids them are refused as malformed, and error answers keep the shape
and correlation id of the request."""
from __future__ import annotations

import struct

import pytest
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest

from chaoskit.broker.handlers import load_all
from chaoskit.broker.request_checks import reject_nulls
from chaoskit.broker.server import error_response
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.registry import SUPPORTED, MalformedRequest, decode_request


def test_every_advertised_api_has_a_handler():
    assert set(load_all()) == set(SUPPORTED)


def decoded(request, version):
    request.API_VERSION = version
    request.with_header(correlation_id=77)
    return decode_request(bytes(request.encode(header=True)))[1]


def test_null_arrays_are_malformed_where_the_schema_forbids_them():
    produce = decoded(ProduceRequest(transactional_id=None, acks=1, timeout_ms=1, topic_data=None), 9)
    with pytest.raises(MalformedRequest, match="topic_data is null") as e:
        reject_nulls(produce, 9, 77)
    assert e.value.correlation_id == 77
    everything = decoded(MetadataRequest(topics=None), 4)  # nullable from v1: "all topics"
    reject_nulls(everything, 4, 77)
    by_name = decoded(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]), 12)
    reject_nulls(by_name, 12, 77)  # the absent topic id decodes as None and is fine


def test_error_answers_keep_shape_and_correlation_id():
    header = RequestHeader(request_api_key=18, request_api_version=2, correlation_id=42)
    framed = error_response(header, ErrorCode.INVALID_REQUEST)
    assert struct.unpack(">iih", framed[:10]) == (len(framed) - 4, 42, ErrorCode.INVALID_REQUEST)
    # Metadata has a top-level error code only from v13: v1 is answered bare, never as an empty success
    header = RequestHeader(request_api_key=3, request_api_version=1, correlation_id=43)
    framed = error_response(header, ErrorCode.INVALID_REQUEST)
    assert struct.unpack(">iih", framed) == (6, 43, ErrorCode.INVALID_REQUEST)
