"""Checks a decoded request must pass before a handler sees it.

kafka-python's decoders accept a null (length -1) array, string or struct even where the schema
does not allow one at that version; Kafka refuses such a request as malformed, and so do we, so
handlers can iterate every array without guarding against None.
"""
from __future__ import annotations

from typing import Any

from chaoskit.protocol.registry import MalformedRequest


def _null_path(obj: Any, version: int, path: str) -> str | None:
    """The dotted path of the first field that is null without being nullable, else None."""
    for field in obj._struct._fields:
        if not field.for_version_q(version) or field.tag is not None:
            continue
        value = getattr(obj, field.name)
        here = f"{path}.{field.name}" if path else field.name
        if value is None:
            # kafka-python decodes the all-zero UUID (no topic id) as None: that one is fine
            if not field.nullable_for_version_q(version) and field.type_str != "uuid":
                return here
        elif field.is_struct():
            found = _null_path(value, version, here)
            if found:
                return found
        elif field.is_struct_array():
            for i, item in enumerate(value):
                found = _null_path(item, version, f"{here}[{i}]")
                if found:
                    return found
    return None


def reject_nulls(request: Any, version: int, correlation_id: int) -> None:
    """MalformedRequest when a non-nullable field of the request is null."""
    path = _null_path(request, version, "")
    if path is not None:
        raise MalformedRequest(f"{type(request).__name__} v{version}: {path} is null, which this version "
                               "does not allow", correlation_id)
