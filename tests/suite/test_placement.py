"""Which partitioning rule explains each acknowledged send of a topic (suite/placement.py)."""
from __future__ import annotations

from typing import Any

from chaoskit.client.linear_hash import linear_partition, modulo_partition
from chaoskit.history.reader import History
from chaoskit.suite.placement import routing


def op(process: Any, f: str, type_: str, index: int, **fields: Any) -> dict[str, Any]:
    return {"process": process, "f": f, "type": type_, "index": index, "time_ns": index, **fields}


def send(process: int, topic: str, key: str, seq: int, partition: int, offset: int, index: int) -> list[dict[str, Any]]:
    value = [process, key, seq]
    return [op(process, "send", "invoke", index, topic=topic, key=key, value=value),
            op(process, "send", "ok", index + 1, topic=topic, key=key, value=value, partition=partition, offset=offset)]


def test_routing_says_which_rule_explains_each_send():
    keys = [f"k{i}" for i in range(30)]
    # a key whose modulo-6 partition is neither its modulo-4 nor its modulo-8 one
    six = next(k for k in keys if modulo_partition(k.encode(), 6) not in
               {modulo_partition(k.encode(), 4), modulo_partition(k.encode(), 8)})
    ops = [*send(0, "t", six, 0, modulo_partition(six.encode(), 6), 0, 0),
           *send(0, "t", six, 1, linear_partition(six.encode(), 4, 6), 1, 2),
           *send(0, "t", six, 2, 9, 2, 4),  # beyond every count: no rule
           *send(0, "other", six, 0, 0, 0, 6)]
    got = routing(History(ops), "t", (4, 6, 8), initial=4)
    assert got == {"sends": 3, "linear": 1, "stock": 2, "linear_only": 0, "stock_only": 1, "neither": 1}
