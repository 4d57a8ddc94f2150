"""The aiokafka client on a real cluster: sends acknowledged with their offsets, a poll delivers
them with the same values, its rebalance callback is recorded, a held consumer pauses, and close
stops its loop."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.run.live import Run
from chaoskit_plugins.clients.aio import AiokafkaClient


def test_send_poll_callbacks_hold_and_close(make_cluster: Callable[..., LocalCluster]):
    cluster = make_cluster(brokers=1, controllers=1)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topic("t", 2, 1)
    cluster.wait_until_replicated("t")
    recorded: list[dict[str, Any]] = []
    run = Run.around(cluster, record=recorded.append)
    producer, consumer = AiokafkaClient(poll_ms=300).open(run, 0), AiokafkaClient(poll_ms=300).open(run, 1)
    try:
        sent = [producer.invoke(run, {"f": "send", "topic": "t", "key": f"k{i}", "value": [0, f"k{i}", 0]})
                for i in range(10)]
        assert all(s["type"] == "ok" and s["offset"] >= 0 for s in sent), sent
        seen: dict[int, Any] = {}

        def read_all() -> bool:
            done = consumer.invoke(run, {"f": "poll", "topic": "t"})
            seen.update({r[3][1]: r for r in done["value"]})
            return len(seen) == 10
        wait_for(read_all, 60, "the aiokafka consumer reading the 10 records")
        assert {(s["partition"], s["offset"]) for s in sent} == {(r[0], r[1]) for r in seen.values()}
        assert any(op["f"] == "on_partitions_assigned" and op["process"] == 1 for op in recorded)
        consumer.hold()
        assert consumer.invoke(run, {"f": "poll", "topic": "t"})["value"] == []
        consumer.release()
    finally:
        producer.close(run)
        consumer.close(run)
    assert not producer._thread.is_alive() and not consumer._thread.is_alive()
