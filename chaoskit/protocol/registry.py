"""Which requests the broker answers, at which versions, and how frames become objects and back.

Standard APIs use kafka-python's schema classes, with the KIP tagged fields of extensions.py where
they apply; the private ones come from internal.py.
SUPPORTED is what ApiVersions advertises; docs/protocol.md says why each range was chosen (in
short: v2 record batches only, no topic IDs, the group protocol before KIP-848).
"""
from __future__ import annotations

import io
import struct
from typing import Any

from kafka.protocol.admin import (CreatePartitionsRequest, CreateTopicsRequest, DeleteRecordsRequest,
                                  DeleteTopicsRequest, DescribeConfigsRequest, DescribeGroupsRequest,
                                  ListGroupsRequest)
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import (FetchRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                     ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest,
                                     OffsetForLeaderEpochRequest, SyncGroupRequest)
from kafka.protocol.metadata import (ApiVersionsRequest, ApiVersionsResponse, FindCoordinatorRequest,
                                     MetadataRequest)
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.extensions import EXTENDED_REQUESTS, EXTENDED_RESPONSES
from chaoskit.protocol.framing import frame
from chaoskit.protocol.internal import INTERNAL_APIS

API_VERSIONS_KEY = 18
_FIXED_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_ERROR_ONLY = struct.Struct(">ih")  # correlation_id, error_code

# api_key -> (min, max) we answer. Keep docs/protocol.md in step.
SUPPORTED: dict[int, tuple[int, int]] = {
    0: (3, 9),    # Produce: v3 is the first with v2 batches; v10+ adds KIP-951 fields, v13 topic IDs
    1: (4, 12),   # Fetch: v4 first with v2 batches; v13+ identifies topics by ID
    2: (1, 7),    # ListOffsets: v7 adds MAX_TIMESTAMP; v8+ is tiered storage
    3: (0, 12),   # Metadata: by topic name; v13 only adds a top-level error
    8: (2, 8),    # OffsetCommit: v9 is KIP-848 member epochs, v10 topic IDs
    9: (1, 7),    # OffsetFetch: v8 batches groups, v10 topic IDs
    10: (0, 3),   # FindCoordinator: v4 batches coordinator keys
    11: (0, 9),   # JoinGroup
    12: (0, 4),   # Heartbeat
    13: (0, 5),   # LeaveGroup
    14: (0, 5),   # SyncGroup
    15: (0, 5),   # DescribeGroups: v6 adds KIP-1043 error messages
    16: (0, 4),   # ListGroups: v5 filters by group type
    18: (0, 3),   # ApiVersions: v4 only changes feature ranges
    19: (2, 7),   # CreateTopics
    20: (1, 5),   # DeleteTopics: v6 deletes by topic ID
    21: (0, 2),   # DeleteRecords
    22: (0, 4),   # InitProducerId: v5+ is transactions v2 / 2PC
    23: (2, 4),   # OffsetForLeaderEpoch
    32: (1, 4),   # DescribeConfigs: v0 is gone from Kafka 4's schemas
    37: (0, 3),   # CreatePartitions
    **{key: (0, 0) for key in INTERNAL_APIS},
}

_STANDARD_REQUESTS: tuple[type[ApiMessage], ...] = (
    ProduceRequest, FetchRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest,
    OffsetFetchRequest, FindCoordinatorRequest, JoinGroupRequest, HeartbeatRequest, LeaveGroupRequest,
    SyncGroupRequest, DescribeGroupsRequest, ListGroupsRequest, ApiVersionsRequest, CreateTopicsRequest,
    DeleteTopicsRequest, DeleteRecordsRequest, InitProducerIdRequest, OffsetForLeaderEpochRequest,
    CreatePartitionsRequest, DescribeConfigsRequest,
)
REQUESTS: dict[int, type[ApiMessage]] = {
    **{cls.API_KEY: cls for cls in _STANDARD_REQUESTS},
    **EXTENDED_REQUESTS,
    **{key: req for key, (req, _resp) in INTERNAL_APIS.items()},
}
assert set(REQUESTS) == set(SUPPORTED), "every supported key needs a request class"


class UnsupportedVersion(Exception):
    """A request for an API key or version we do not answer; answer it with unsupported_version_response."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int, client_id: str | None = None,
                 request: ApiMessage | None = None) -> None:
        self.api_key, self.api_version, self.correlation_id = api_key, api_version, correlation_id
        self.request = request  # the body, when its schema knows that version: its partitions get the error
        self.header = RequestHeader(request_api_key=api_key, request_api_version=api_version,
                                    correlation_id=correlation_id, client_id=client_id)
        rng = SUPPORTED.get(api_key)
        what = f"versions {rng[0]}-{rng[1]}" if rng else "no versions"
        super().__init__(f"API key {api_key} v{api_version} is not supported (we answer {what})")


class MalformedRequest(Exception):
    """The frame does not decode as the request its header names; the connection should be closed."""

    def __init__(self, reason: str, correlation_id: int | None) -> None:
        self.reason, self.correlation_id = reason, correlation_id
        where = f" (correlation id {correlation_id})" if correlation_id is not None else ""
        super().__init__(f"malformed request{where}: {reason}")


def _supports(api_key: int, api_version: int) -> bool:
    rng = SUPPORTED.get(api_key)
    return rng is not None and rng[0] <= api_version <= rng[1]


def _flexible(cls: type[ApiMessage] | None, version: int) -> bool:
    """Whether a request uses header v2; flexible ranges are open-ended, so this holds past the schema."""
    flexible = cls._flexible_versions if cls is not None else None
    return flexible is not None and version >= flexible[0]


def _decode_body(cls: type[ApiMessage], data: memoryview, pos: int, version: int) -> tuple[ApiMessage, int]:
    flexible = cls.flexible_version_q(version)
    decode = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=cls)
    return decode(data, pos)


def _body_if_known(cls: type[ApiMessage] | None, data: memoryview, pos: int, version: int) -> ApiMessage | None:
    """The request body at a version we do not serve, when its schema knows that version, else None."""
    if cls is None or not 0 <= version <= cls.max_version:
        return None
    try:
        return _decode_body(cls, data, pos, version)[0]
    except Exception:  # noqa: BLE001 -- only a better error answer hangs on it
        return None


def decode_request(frame_bytes: bytes) -> tuple[RequestHeader, ApiMessage]:
    """(header, request) from a frame's payload (without its size prefix)."""
    if len(frame_bytes) < _FIXED_HEADER.size:
        raise MalformedRequest(f"{len(frame_bytes)} bytes is shorter than a request header", None)
    api_key, api_version, correlation_id = _FIXED_HEADER.unpack_from(frame_bytes)
    cls = REQUESTS.get(api_key)
    buf = io.BytesIO(frame_bytes)
    try:
        header = RequestHeader.decode(buf, flexible=_flexible(cls, api_version))
    except Exception as e:  # kafka-python raises struct.error, ValueError, UnicodeDecodeError...
        if not _supports(api_key, api_version):
            raise UnsupportedVersion(api_key, api_version, correlation_id) from e
        raise MalformedRequest(f"request header does not decode: {e!r}", correlation_id) from e
    data = memoryview(frame_bytes)
    if not _supports(api_key, api_version):
        raise UnsupportedVersion(api_key, api_version, correlation_id, header.client_id,
                                 _body_if_known(cls, data, buf.tell(), api_version))
    assert cls is not None
    try:
        request, end = _decode_body(cls, data, buf.tell(), api_version)
    except Exception as e:
        raise MalformedRequest(f"{cls.__name__} v{api_version} body does not decode: {e!r}", correlation_id) from e
    if end != len(frame_bytes):
        raise MalformedRequest(f"{cls.__name__} v{api_version} has {len(frame_bytes) - end} bytes "
                               "after its last field", correlation_id)
    request._header = header
    return header, request


def response_class(api_key: int, api_version: int) -> type[ApiMessage]:
    """The response class paired with a request key, at a version (with the KIP tagged fields)."""
    if api_key in EXTENDED_RESPONSES:
        return EXTENDED_RESPONSES[api_key][api_version]
    header = RequestHeader(request_api_key=api_key, request_api_version=api_version, correlation_id=0)
    cls = header.get_response_class()
    if cls is None:
        raise KeyError(f"no response class for API key {api_key}")
    return cls


def encode_response(header: RequestHeader, response: ApiMessage) -> bytes:
    """A framed response to the request with this header, at the request's version.

    A flexible version gets response header v1 (with tagged fields), except ApiVersions, whose
    response header is always v0 so a client can read it before it knows our versions.
    """
    version = header.request_api_version
    if header.request_api_key == API_VERSIONS_KEY and not _supports(API_VERSIONS_KEY, version):
        version = 0
    response.API_VERSION = version  # before with_header: kafka-python's setter touches a request header
    response.with_header(correlation_id=header.correlation_id)
    return bytes(response.encode(header=True, framed=True))


def api_versions_response(error_code: int = ErrorCode.NONE, throttle_time_ms: int = 0) -> ApiVersionsResponse:
    """Our ApiVersions answer (any version; encode_response picks it)."""
    keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(SUPPORTED.items())]
    return ApiVersionsResponse(error_code=error_code, api_keys=keys, throttle_time_ms=throttle_time_ms)


def _with_error(obj: Any, code: int) -> Any:
    if "error_code" in obj.fields:
        obj.error_code = code
    return obj


def unsupported_version_response(header: RequestHeader, request: ApiMessage | None = None) -> bytes:
    """The framed UNSUPPORTED_VERSION answer to a request we do not take, in the form its version
    can carry.

    ApiVersions gets a v0 response listing our versions (KIP-511), so the client retries with one we
    answer. Another API gets its own response shape at that version: with the top-level error code
    where that version has one, else (Produce, Fetch before v7, ListOffsets) with the error on each
    partition the request named (`request`, its body decoded at that version). An unknown key, a
    negative version or one beyond the schema gets a header v0 and a bare int16 error code, the
    most a client can be told.
    """
    key, version = header.request_api_key, header.request_api_version
    if key == API_VERSIONS_KEY:
        v0 = RequestHeader(request_api_key=key, request_api_version=0, correlation_id=header.correlation_id)
        return encode_response(v0, api_versions_response(ErrorCode.UNSUPPORTED_VERSION))
    try:
        cls = response_class(key, version) if version >= 0 else None
        response = cls(version=version) if cls is not None else None
    except (KeyError, ValueError, IndexError):
        response = None
    if response is not None:
        field = response.fields.get("error_code")
        if field is not None and field.for_version_q(version):
            return encode_response(header, _with_error(response, ErrorCode.UNSUPPORTED_VERSION))
        from chaoskit.protocol.unsupported import partition_errors

        answer = partition_errors(key, request, ErrorCode.UNSUPPORTED_VERSION) if request is not None else None
        if answer is not None:
            return encode_response(header, answer)
    return frame(_ERROR_ONLY.pack(header.correlation_id, ErrorCode.UNSUPPORTED_VERSION))
