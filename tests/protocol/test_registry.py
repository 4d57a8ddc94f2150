"""The request registry: kafka-python's own encodings decode here, our responses decode there."""
import struct

import pytest
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.producer import ProduceRequest

from chaoskit.protocol import registry
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.records import build_batch, split_batches
from chaoskit.protocol.registry import (SUPPORTED, MalformedRequest, UnsupportedVersion, decode_request,
                                        encode_response, response_class, unsupported_version_response)

ALL_VERSIONS = [(key, v) for key, (lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)]


def client_frame(request, correlation_id=7) -> bytes:
    """What kafka-python puts on the wire, without the size prefix."""
    request.with_header(correlation_id=correlation_id, client_id="tester")
    return bytes(request.encode(header=True, framed=True))[4:]


def client_reads(request, response_bytes):
    """Decode our response exactly as kafka-python's connection does (header version, correlation id)."""
    proto = KafkaProtocol(client_id="tester")
    proto.send_request(request, correlation_id=7)
    [(correlation_id, response)] = proto.receive_bytes(response_bytes)
    assert correlation_id == 7
    return response


@pytest.mark.parametrize("key,version", ALL_VERSIONS, ids=[f"{k}v{v}" for k, v in ALL_VERSIONS])
def test_every_supported_version_round_trips(key, version):
    request = registry.REQUESTS[key](version=version)
    if key == 0:
        request.acks = -1  # acks=0 expects no response
    header, decoded = decode_request(client_frame(request))
    assert (header.request_api_key, header.request_api_version, header.correlation_id) == (key, version, 7)
    assert header.client_id == "tester"
    assert decoded == request
    response = response_class(key, version)(version=version)
    got = client_reads(request, encode_response(header, response))  # kafka-python's own classes
    # Metadata is answered with the KIP-tagged class (extensions.py); a stock client reads its own
    assert got == (MetadataResponse(version=version) if key == 3 else response)


def test_produce_records_arrive_byte_for_byte():
    batch = build_batch([(b"k1", b"v1"), (b"k2", b"v2")])
    P = ProduceRequest
    req = P[9](acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(
        name="orders", partition_data=[P.TopicProduceData.PartitionProduceData(index=2, records=batch)])])
    _header, decoded = decode_request(client_frame(req))
    [topic] = decoded.topic_data
    assert topic.name == "orders" and topic.partition_data[0].index == 2
    assert split_batches(topic.partition_data[0].records) == [batch]


def test_flexible_responses_get_header_v1_but_api_versions_keeps_v0():
    md = MetadataRequest[12](topics=None, allow_auto_topic_creation=False)
    header, _ = decode_request(client_frame(md))
    out = encode_response(header, MetadataResponse(version=12))
    assert out[4:9] == struct.pack(">ib", 7, 0)  # correlation id, then an empty tagged-field section
    av = ApiVersionsRequest[3](client_software_name="t", client_software_version="1")
    header, _ = decode_request(client_frame(av))
    out = encode_response(header, registry.api_versions_response())
    # v0 header: the body's int16 error code follows the correlation id directly
    assert out[4:10] == struct.pack(">ih", 7, 0)
    assert client_reads(av, out).api_keys[0].api_key == 0


def test_api_versions_at_an_unknown_version_gets_our_list_at_v0():
    req = ApiVersionsRequest[4](client_software_name="t", client_software_version="1")
    with pytest.raises(UnsupportedVersion) as err:
        decode_request(client_frame(req))
    assert (err.value.api_key, err.value.api_version, err.value.correlation_id) == (18, 4, 7)
    response = client_reads(req, unsupported_version_response(err.value.header))
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == SUPPORTED


def test_other_api_at_unsupported_version_gets_its_error_shape():
    req = MetadataRequest[13](topics=None, allow_auto_topic_creation=False)
    with pytest.raises(UnsupportedVersion) as err:
        decode_request(client_frame(req))
    assert client_reads(req, unsupported_version_response(err.value.header)).error_code == 35


def test_api_without_top_level_error_gets_bare_error_code():
    # Produce v2 (message format v1) has no top-level error field: header v0 + int16 error
    raw = struct.pack(">hhih", 0, 2, 9, -1)
    with pytest.raises(UnsupportedVersion) as err:
        decode_request(raw)
    assert unsupported_version_response(err.value.header) == struct.pack(">iih", 6, 9, 35)


def test_unknown_api_key_is_unsupported_not_malformed():
    with pytest.raises(UnsupportedVersion, match="API key 9999 v0 is not supported"):
        decode_request(struct.pack(">hhih", 9999, 0, 1, -1))


@pytest.mark.parametrize("mangle,reason", [
    (lambda f: f[:6], "shorter than a request header"),
    (lambda f: f[:-3], "body does not decode"),
    (lambda f: f + b"\x00junk", "5 bytes after its last field"),
    (lambda f: f[:8] + b"\x7f\xff", "header does not decode"),
])
def test_malformed_requests_are_named(mangle, reason):
    req = MetadataRequest[4](topics=[MetadataRequest.MetadataRequestTopic(name="t")], allow_auto_topic_creation=False)
    with pytest.raises(MalformedRequest, match=reason) as err:
        decode_request(mangle(client_frame(req)))
    if reason != "shorter than a request header":
        assert err.value.correlation_id == 7


def test_versions_make_kafka_python_see_a_modern_broker():
    assert infer_broker_version_from_api_versions(SUPPORTED) >= (3, 2)


def test_supported_versions_fit_the_schemas_and_need_no_topic_ids():
    for key, (lo, hi) in SUPPORTED.items():
        cls = registry.REQUESTS[key]
        assert cls.valid_versions[0] <= lo <= hi <= cls.max_version, cls.__name__
    # topic IDs would need a topic-id registry; these APIs must stay on names
    for key in (0, 1, 8, 9, 20):
        fields = _field_names(registry.REQUESTS[key]._struct, SUPPORTED[key][1])
        assert "topic_id" not in fields, registry.REQUESTS[key].__name__


def _field_names(struct_field, version) -> set[str]:
    names = set()
    for f in struct_field.fields.values():
        if f.for_version_q(version):
            names.add(f.name)
            if f.is_struct() or f.is_struct_array():
                names |= _field_names(f if f.is_struct() else f.array_of, version)
    return names


def test_private_apis_are_advertised():
    assert {32000, 32001, 32002} <= set(SUPPORTED)
    assert RequestHeader(request_api_key=32000, request_api_version=0, correlation_id=1).get_response_class() is not None
