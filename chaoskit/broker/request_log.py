"""The broker's request log (`request.log.enable`): one line per client request and what it got.

    13:02:11.402 chaoskit-3 Fetch v11 orders-0@137 cle=4 lfe=3 -> ok
    13:02:11.410 chaoskit-1 Produce v8 orders-0 -> orders-0 NOT_LEADER_OR_FOLLOWER

What a finding shows of what a client did on the wire (chaoskit matrix). Replicas' fetches and the
controller's requests are left out: they are the cluster's own traffic, not a client's.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TextIO

from chaoskit.protocol.errors import error_name

INTERNAL_KEYS = 32000  # chaoskit's private broker-internal APIs start here (docs/protocol.md)
# per-partition request fields worth a glance, as short names
FIELDS = {"fetch_offset": "@", "current_leader_epoch": " cle=", "last_fetched_epoch": " lfe=",
          "leader_epoch": " le=", "timestamp": " ts=", "committed_offset": " co=", "committed_leader_epoch": " cle="}
INDEX_KEYS = ("partition", "partition_index", "index")
NAME_KEYS = ("topic", "name")
TOPICS_KEYS = ("topics", "topic_data")  # Produce names them topic_data / partition_data
PARTITIONS_KEYS = ("partitions", "partition_data")


class RequestLog:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out: TextIO = open(path, "a", buffering=1, encoding="utf-8")  # line-buffered: a killed broker keeps it

    def write(self, header: Any, request: Any, response: Any) -> None:
        if header.request_api_key >= INTERNAL_KEYS:
            return
        asked = request.to_dict() if hasattr(request, "to_dict") else {}
        if isinstance(asked.get("replica_id"), int) and asked["replica_id"] >= 0:
            return  # a follower's fetch or query
        errors = _errors(response.to_dict() if hasattr(response, "to_dict") else {})
        stamp = time.strftime("%H:%M:%S", time.localtime()) + f".{int(time.time() * 1000) % 1000:03d}"
        self._out.write(f"{stamp} {header.client_id} {type(request).__name__.removesuffix('Request')} "
                        f"v{header.request_api_version} {_partitions(asked)} -> {errors or 'ok'}\n")

    def close(self) -> None:
        self._out.close()


def _partitions(asked: dict[str, Any]) -> str:
    parts = []
    topics = next((asked[k] for k in TOPICS_KEYS if asked.get(k)), ())
    for topic in topics:
        name = next((topic[k] for k in NAME_KEYS if k in topic), "?")
        for p in next((topic[k] for k in PARTITIONS_KEYS if topic.get(k)), ()):
            index = next((p[k] for k in INDEX_KEYS if k in p), "?")
            parts.append(f"{name}-{index}" + "".join(f"{short}{p[f]}" for f, short in FIELDS.items() if f in p))
    return " ".join(parts) or ", ".join(next((str(t[k]) for k in NAME_KEYS if k in t), "?") for t in topics)


def _errors(answer: Any, where: str = "") -> str:
    """Every non-zero error code in an answer, with the topic-partition it belongs to."""
    found = []
    if isinstance(answer, dict):
        here = where
        name = next((answer[k] for k in NAME_KEYS if isinstance(answer.get(k), str)), None)
        index = next((answer[k] for k in INDEX_KEYS if isinstance(answer.get(k), int)), None)
        if name is not None:
            here = name
        if index is not None:
            here = f"{where}-{index}"
        if answer.get("error_code"):
            found.append(f"{here} {error_name(answer['error_code'])}".strip())
        diverging = answer.get("diverging_epoch")
        if isinstance(diverging, dict) and diverging.get("end_offset", -1) >= 0:
            found.append(f"{here} diverging e{diverging.get('epoch')}@{diverging.get('end_offset')}")
        for k, v in answer.items():
            if isinstance(v, (list, dict)) and k != "diverging_epoch":
                found += [e for e in [_errors(v, here)] if e]
    elif isinstance(answer, list):
        found += [e for e in (_errors(v, where) for v in answer) if e]
    return " ".join(found)
