"""Backends by name: local and docker make clusters of the same spec; anything else is refused
with the list of backends; the docker backend refuses a proxy_url (it runs its own proxy) and a router (it routes by itself)."""
from __future__ import annotations

import pytest

from chaoskit.cluster.backends import BACKENDS, new_cluster
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import ClusterSpec


def test_local_is_the_process_backend(tmp_path):
    cluster = new_cluster("local", ClusterSpec(brokers=1, run_dir=tmp_path))
    assert type(cluster) is LocalCluster and cluster.backend == "local"


def test_an_unknown_backend_names_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="'k8s' is not one of local, docker"):
        new_cluster("k8s", ClusterSpec(run_dir=tmp_path))
    assert BACKENDS == ("local", "docker")


def test_docker_refuses_a_proxy_url_before_touching_the_engine(tmp_path):
    spec = ClusterSpec(proxied=True, proxy_url="http://127.0.0.1:8474", run_dir=tmp_path)
    with pytest.raises(ValueError, match="runs its own fault proxy"):
        new_cluster("docker", spec)


def test_docker_refuses_a_router_of_its_own(tmp_path):
    class Elsewhere:
        def address(self, source, target, real):
            return ("127.0.0.2", real[1])

    with pytest.raises(ValueError, match="routes by itself"):
        new_cluster("docker", ClusterSpec(router=Elsewhere(), run_dir=tmp_path))
