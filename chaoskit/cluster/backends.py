"""The cluster backends by name: `new_cluster("local" | "docker", spec)`.

The docker backend (and with it the docker SDK) is imported only when asked for, so the local
backend works where docker is not installed.
"""
from __future__ import annotations

from typing import Any

from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import BACKENDS, ClusterSpec


def new_cluster(backend: str, spec: ClusterSpec, **options: Any) -> LocalCluster:
    """An unstarted cluster of `spec` on `backend`; the docker one raises EngineUnavailable when no
    engine answers, with what to do about it."""
    if backend == "local":
        return LocalCluster(spec, **options)
    if backend == "docker":
        from chaoskit.cluster.docker import DockerCluster
        return DockerCluster(spec, **options)
    raise ValueError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
