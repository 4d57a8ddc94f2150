"""Toxic types as the API knows them: attributes and defaults, validation, and a toxic's JSON shape.

What each type does to the bytes is in behaviours.py; this module is only the data. Attribute
values are non-negative integers, in Toxiproxy's units: milliseconds (latency, jitter, delay of
slow_close, timeout), KB/s (bandwidth rate, 1 KB = 1000 bytes), bytes (average_size,
size_variation, limit_data bytes) and microseconds (slicer delay).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.proxy.errors import BAD_REQUEST_BODY, INVALID_STREAM, INVALID_TOXIC_TYPE, ApiError

# type -> its attributes, in the order Toxiproxy lists them; every one defaults to 0
TOXIC_TYPES: dict[str, tuple[str, ...]] = {
    "noop": (),
    "latency": ("latency", "jitter"),
    "bandwidth": ("rate",),
    "slow_close": ("delay",),
    "timeout": ("timeout",),
    "reset_peer": ("timeout",),
    "slicer": ("average_size", "size_variation", "delay"),
    "limit_data": ("bytes",),
}
STREAMS = ("upstream", "downstream")


@dataclass
class Toxic:
    """One toxic of a proxy. `seq` orders a direction's chain: a new toxic goes last."""

    name: str
    type: str
    stream: str
    toxicity: float = 1.0
    attributes: dict[str, int] = field(default_factory=dict)
    seq: int = 0

    @property
    def direction(self) -> str:
        return self.stream.lower()

    def attr(self, key: str) -> int:
        return self.attributes.get(key, 0)

    def to_json(self) -> dict[str, Any]:
        return {"attributes": dict(self.attributes), "name": self.name, "type": self.type,
                "stream": self.stream, "toxicity": self.toxicity}


def _bad(detail: str) -> ApiError:
    return BAD_REQUEST_BODY.joined(detail)


def _string(body: dict[str, Any], key: str, default: str) -> str:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _bad(f"{key} must be a string, got {value!r}")
    return value


def _toxicity(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise _bad(f"toxicity must be a number from 0 to 1 (the share of connections the toxic "
                   f"applies to), got {value!r}")
    return float(value)


def parse_attributes(toxic_type: str, raw: Any, base: dict[str, int] | None = None) -> dict[str, int]:
    """The attributes of `toxic_type` from `raw`, over `base` (an update changes only what it names)."""
    known = TOXIC_TYPES[toxic_type]
    attrs = dict(base) if base is not None else dict.fromkeys(known, 0)
    if raw is None:
        return attrs
    if not isinstance(raw, dict):
        raise _bad(f"attributes must be a JSON object, got {raw!r}")
    for key, value in raw.items():
        if key not in known:
            allowed = ", ".join(known) or "none"
            raise _bad(f"unknown attribute {key!r} for toxic type {toxic_type} (it takes: {allowed})")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _bad(f"attribute {key} of a {toxic_type} toxic must be a non-negative integer, got {value!r}")
        attrs[key] = value
    return attrs


def parse_new_toxic(body: Any) -> Toxic:
    """A toxic from a create request, checked in Toxiproxy's order: body, stream, type.

    The caller checks the name for a conflict (409) before `parse_attributes`, as Toxiproxy does.
    """
    if not isinstance(body, dict):
        raise _bad(f"expected a JSON object with name, type, stream, toxicity and attributes, got {body!r}")
    toxic_type = _string(body, "type", "")
    stream = _string(body, "stream", "downstream")
    if stream.lower() not in STREAMS:
        raise INVALID_STREAM
    name = _string(body, "name", "") or f"{toxic_type}_{stream}"
    if toxic_type not in TOXIC_TYPES:
        raise INVALID_TOXIC_TYPE
    toxicity = _toxicity(body["toxicity"]) if body.get("toxicity") is not None else 1.0
    return Toxic(name=name, type=toxic_type, stream=stream, toxicity=toxicity)


def parse_update(toxic: Toxic, body: Any) -> tuple[float, dict[str, int]]:
    """(toxicity, attributes) an update request asks for; name, type and stream cannot change."""
    if not isinstance(body, dict):
        raise _bad(f"expected a JSON object with toxicity and/or attributes, got {body!r}")
    toxicity = _toxicity(body["toxicity"]) if body.get("toxicity") is not None else toxic.toxicity
    return toxicity, parse_attributes(toxic.type, body.get("attributes"), toxic.attributes)
