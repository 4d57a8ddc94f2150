"""Fixtures shared by the end-to-end tests of every package: real clusters (ZooKeeper, controllers,
brokers as processes, or as containers with backend="docker"; optionally behind fault proxies) with
short timeouts so failures are detected in seconds, stopped at the end of the module even when a
test fails. `backend` parameterizes a module's cluster over both backends."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import ClusterSpec

# quick failure detection for tests: ZooKeeper sessions of 4 s, ISR shrink after 3 s
FAST_BROKER = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000,
               "replica.fetch.wait.max.ms": 200}
FAST_CONTROLLER = {"zookeeper.session.timeout.ms": 4000, "controller.request.timeout.ms": 2000}


@pytest.fixture(scope="module", params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend in turn for a module that asks for it (docker tests carry the docker mark)."""
    return str(request.param)


@pytest.fixture(scope="module")
def make_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., LocalCluster]]:
    """make_cluster(brokers=3, controllers=2, broker_config=None, controller_config=None, backend="local", **spec)
    -> a started cluster (LocalCluster, or DockerCluster for backend="docker"), stopped at module end."""
    started: list[LocalCluster] = []

    def make(brokers: int = 3, controllers: int = 2, broker_config: dict[str, Any] | None = None,
             controller_config: dict[str, Any] | None = None, backend: str = "local", **spec: Any) -> LocalCluster:
        kind = LocalCluster
        if backend == "docker":
            from chaoskit.cluster.docker import DockerCluster
            kind = DockerCluster
        cluster = kind(ClusterSpec(
            brokers=brokers, controllers=controllers, run_dir=tmp_path_factory.mktemp("run"),
            broker_config={**FAST_BROKER, **(broker_config or {})}, controller_config={**FAST_CONTROLLER, **(controller_config or {})},
            **spec))
        started.append(cluster)
        cluster.start()
        return cluster

    try:
        yield make
    finally:
        for cluster in reversed(started):
            cluster.stop()


@pytest.fixture
def restore(request: pytest.FixtureRequest) -> Iterator[Callable[[LocalCluster], None]]:
    """restore(cluster): after the test, heal every proxied link, start every stopped node again (keeping its data) and wait
    until every broker sees every other, so the next test of the module gets a whole cluster."""
    clusters: list[LocalCluster] = []
    yield clusters.append
    for cluster in clusters:
        if cluster.proxy_url is not None:
            cluster.proxies.reset()  # every link enabled, every toxic gone
        for node in [*cluster.controllers.values(), *cluster.brokers.values()]:
            if node.paused:
                node.resume()
            if not node.running:
                node.start(clean=False)
        for broker in cluster.brokers.values():
            cluster.wait_for_metadata(broker, 30)
