"""The stock kafka-python client on a real cluster: a close with a send still pending (its leader
gone) returns, failing that send, instead of raising and leaving the producer for its __del__."""
from __future__ import annotations

import time
from collections.abc import Callable

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.run.live import Run
from chaoskit_plugins.clients.stock import KafkaPythonClient


def test_close_with_a_send_pending_at_a_dead_leader(make_cluster: Callable[..., LocalCluster]):
    cluster = make_cluster(brokers=1, controllers=1)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topic("t", 1, 1)
    cluster.wait_until_replicated("t")
    test = Run.around(cluster, record=lambda op: None)
    client = KafkaPythonClient(send_timeout_s=1).open(test, 0)
    op = {"f": "send", "topic": "t", "key": "k", "value": [0, "k", 0]}
    assert client.invoke(test, op)["type"] == "ok"
    cluster.broker(1).kill()
    pending = client.invoke(test, {**op, "value": [0, "k", 1]})
    assert pending["type"] == "info", pending  # may have been written: unknown
    producer = client._producer
    began = time.monotonic()
    client.close(test)  # kafka-python's own close raises KafkaTimeoutError here
    assert producer._closed and time.monotonic() - began < 15
    wait_for(lambda: not producer._sender.is_alive(), 10, "the producer's network thread ending")
