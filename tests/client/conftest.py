"""The ordered client's tests run against one real 3-broker cluster per module (patched profile,
quick failure detection, a 300 ms partition-deletion tick), stopped at module end even on failure."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.local import LocalCluster


@pytest.fixture(scope="module")
def cluster(make_cluster: Callable[..., LocalCluster]) -> LocalCluster:
    return make_cluster(brokers=3, controllers=1, profile="patched",
                        controller_config={"delete.topic.partition.interval.delay.ms": 300})


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> Iterator[AdminClient]:
    with AdminClient(cluster.bootstrap_servers) as a:
        yield a


@pytest.fixture
def new_topic(cluster: LocalCluster, admin: AdminClient, request: pytest.FixtureRequest) -> Callable[..., str]:
    """new_topic(partitions, config=None) -> a fresh replicated topic named after the test."""
    count = [0]

    def make(partitions: int, config: dict[str, str] | None = None, replication: int = 3) -> str:
        count[0] += 1
        name = f"{request.node.name.replace('[', '-').replace(']', '')}-{count[0]}"[:200]
        admin.create_topic(name, partitions, replication, config=config)
        cluster.wait_until_replicated(name)
        return name
    return make


def read_partition(cluster: LocalCluster, admin: AdminClient, topic: str, partition: int) -> list[Any]:
    """Every record of a partition (from its leader, as a plain consumer fetch)."""
    from chaoskit.protocol.records import decode_records, split_batches
    from chaoskit.protocol.requests import fetch
    from chaoskit.protocol.wire_client import WireClient
    leader = admin.topic(topic).partitions[partition].leader
    out: list[Any] = []
    with WireClient(*cluster.broker(leader).address, timeout=15) as c:
        while True:
            got = fetch(c, topic, partition, len(out) and out[-1].offset + 1)
            records = [r for b in split_batches(bytes(got.records or b"")) for r in decode_records(b)]
            if not records:
                return out
            out.extend(records)
