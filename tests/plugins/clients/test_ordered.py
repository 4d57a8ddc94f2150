"""The "ordered" chaos client on a real cluster: registered by the built-in plugin, sends and
polls as ops (partition, offset, leader epoch; poll records), records its callbacks and
coordinator as ops of its process, and forwards the metadata freeze (also to a client made while
frozen)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.local import LocalCluster
from chaoskit.pluginmanager import get_plugin_manager
from chaoskit.run.live import Run
from chaoskit_plugins.clients.ordered import OrderedClient

TOPIC = "orders"


def test_registered_as_ordered():
    factories: dict[str, Any] = {}
    for found in get_plugin_manager().hook.chaoskit_add_clients():
        factories.update(found)
    assert factories["ordered"] is OrderedClient


def test_send_poll_callbacks_and_freeze(make_cluster: Callable[..., LocalCluster]):
    cluster = make_cluster(brokers=3, controllers=1)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topic(TOPIC, 4, 3)
    cluster.wait_until_replicated(TOPIC)
    recorded: list[dict[str, Any]] = []
    test = Run.around(cluster, record=recorded.append)
    proto = OrderedClient(poll_ms=300)
    producer, consumer = proto.open(test, 0), proto.open(test, 1)
    try:
        producer.freeze_metadata()  # before its producer exists: the producer is made frozen
        sent = [producer.invoke(test, {"f": "send", "topic": TOPIC, "key": f"k{i}", "value": [0, f"k{i}", 0]})
                for i in range(20)]
        assert producer._producer.view.frozen
        producer.thaw_metadata()
        assert not producer._producer.view.frozen
        assert all(op["type"] == "ok" and op["offset"] >= 0 and op["leader_epoch"] == 0 for op in sent)
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            op = consumer.invoke(test, {"f": "poll", "topic": TOPIC})
            assert op["type"] == "ok"
            got.extend(op["value"])
        assert sorted((r[0], r[1]) for r in got) == sorted((op["partition"], op["offset"]) for op in sent)
        assert {r[2]: r[3] for r in got} == {f"k{i}": [0, f"k{i}", 0] for i in range(20)}
    finally:
        producer.close(test)
        consumer.close(test)
    fs = [(e["f"], e["process"]) for e in recorded]
    assert ("coordinator", 1) in fs and ("on_partitions_assigned", 1) in fs and ("on_partitions_revoked", 1) in fs
    assigned = next(e for e in recorded if e["f"] == "on_partitions_assigned")
    assert assigned["type"] == "ok" and assigned["value"] == [[TOPIC, p] for p in range(4)]
    assert not any(e["f"] in ("send", "poll") for e in recorded), "the worker records sends and polls from the ops"
