"""KIP fields on standard APIs: tagged fields of their flexible versions, which stock clients skip.

The classes here are kafka-python 3.0's own message classes with the KIP fields added to their
JSON schema (docs/protocol.md "Tagged fields"):

| tag | field | where |
|---|---|---|
| 10000 | `initial_partition_count` | Metadata response topic (v9+) |
| 10001 | `undeleted_partition_count` | Metadata response topic (v9+), Produce request topic (v9), Fetch request topic (v12) |
| 10002 | `mode` (PartitionMode) | Metadata response partition (v9+) |
| 10005 | `mode_aware` | Produce request (v9): the client reads partition modes (KIP-694) |

A field at its default (-1 for counts, ReadWrite for mode) is not written at all, so an unpatched
broker's answers are byte for byte what they were. kafka-python registers every response class it
defines as the decoder of its API key; the extended Metadata response is taken out of that registry
again, so stock kafka-python clients in the same process keep decoding with their own class, and
`registry.response_class` hands out the extended one to chaoskit's own clients.
"""
from __future__ import annotations

import weakref
from enum import IntEnum
from typing import Any

from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import FetchRequest as _StockFetchRequest
from kafka.protocol.metadata import MetadataResponse as _StockMetadataResponse
from kafka.protocol.producer import ProduceRequest as _StockProduceRequest

TAG_INITIAL_PARTITION_COUNT = 10000
TAG_UNDELETED_PARTITION_COUNT = 10001
TAG_MODE = 10002
TAG_REMOVED_PARTITIONS = 10003  # UpdateMetadata (private) only
TAG_ALLOW_INTERNAL_PARTITION_INCREASE = 10004  # UpdateMetadata (private) only
TAG_MODE_AWARE = 10005

UNKNOWN_COUNT = -1  # a count field's default: not known / not sent
MODE_METADATA_VERSION = 9  # the first Metadata version that carries `mode` (KIP-694's "new version")


class PartitionMode(IntEnum):
    """KIP-694's partition modes (the codes are the KIP's)."""

    READ_WRITE = 0  # produce and fetch
    READ_ONLY = 1   # marked for deletion: fetch only
    NONE = -1       # being removed: neither

    @classmethod
    def of(cls, code: int) -> PartitionMode:
        try:
            return cls(code)
        except ValueError:
            raise ValueError(f"partition mode {code} is not one of 0 (ReadWrite), 1 (ReadOnly), -1 (None)") from None

    @property
    def label(self) -> str:
        return {0: "ReadWrite", 1: "ReadOnly", -1: "None"}[int(self)]


def _tagged(name: str, type_: str, tag: int, since: int, default: int, about: str) -> dict[str, Any]:
    return {"name": name, "type": type_, "versions": f"{since}+", "taggedVersions": f"{since}+", "tag": tag,
            "default": str(default), "ignorable": True, "about": about}


def _field(fields: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(f for f in fields if f["name"] == name)


_INITIAL = ("InitialPartitionCount", "int32", TAG_INITIAL_PARTITION_COUNT, UNKNOWN_COUNT,
            "KIP-253: partitions when the topic was created; -1 unknown.")
_UNDELETED = ("UndeletedPartitionCount", "int32", TAG_UNDELETED_PARTITION_COUNT, UNKNOWN_COUNT,
              "KIP-253: the partition count producers use; -1 unknown.")
_MODE = ("Mode", "int8", TAG_MODE, int(PartitionMode.READ_WRITE), "KIP-694: 0 ReadWrite, 1 ReadOnly, -1 None.")
# a Produce refused by a partition's mode gets our code only from a client that says it reads modes
_MODE_AWARE = ("ModeAware", "bool", TAG_MODE_AWARE, False,
               "KIP-694: this client reads partition modes; without it a Produce to a ReadOnly or None "
               "partition is answered LEADER_NOT_AVAILABLE.")


def _add(fields: list[dict[str, Any]], spec: tuple[str, str, int, int, str], since: int) -> None:
    name, type_, tag, default, about = spec
    fields.append(_tagged(name, type_, tag, since, default, about))
    if type_ == "bool":
        fields[-1]["default"] = "true" if default else "false"


_STOCK_METADATA_DECODER = weakref.proxy(_StockMetadataResponse)


class MetadataResponse(_StockMetadataResponse):
    """Metadata with `initial_partition_count`, `undeleted_partition_count` per topic and `mode` per partition."""

    def __init_subclass__(cls, **kw: Any) -> None:
        # kafka-python creates a subclass per version on first use and registers it as the decoder
        # of its key (its metaclass drops init=False); give the key back to the stock class
        super().__init_subclass__(**kw)
        ResponseClassRegistry.register_response_class(_STOCK_METADATA_DECODER)

    @classmethod
    def json_patch(cls, json: dict[str, Any]) -> dict[str, Any]:
        json = _StockMetadataResponse.json_patch.__func__(cls, json)  # type: ignore[attr-defined]
        topic = _field(json["fields"], "Topics")
        _add(topic["fields"], _INITIAL, 9)
        _add(topic["fields"], _UNDELETED, 9)
        _add(_field(topic["fields"], "Partitions")["fields"], _MODE, MODE_METADATA_VERSION)
        return json


class ProduceRequest(_StockProduceRequest):
    """Produce with the producer's `undeleted_partition_count` per topic and `mode_aware` (v9)."""

    @classmethod
    def json_patch(cls, json: dict[str, Any]) -> dict[str, Any]:
        _add(_field(json["fields"], "TopicData")["fields"], _UNDELETED, 9)
        _add(json["fields"], _MODE_AWARE, 9)
        return json


class FetchRequest(_StockFetchRequest):
    """Fetch with the consumer's `undeleted_partition_count` per topic (v12+)."""

    @classmethod
    def json_patch(cls, json: dict[str, Any]) -> dict[str, Any]:
        _add(_field(json["fields"], "Topics")["fields"], _UNDELETED, 12)
        return json


# kafka-python's clients keep their own Metadata decoder (see the module docstring)
ResponseClassRegistry.register_response_class(_STOCK_METADATA_DECODER)

EXTENDED_REQUESTS: dict[int, type[ApiMessage]] = {cls.API_KEY: cls for cls in (ProduceRequest, FetchRequest)}
EXTENDED_RESPONSES: dict[int, type[ApiMessage]] = {MetadataResponse.API_KEY: MetadataResponse}
