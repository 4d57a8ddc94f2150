"""Reaching the Docker engine: the SDK imported lazily, and a plain error when no engine answers.

    client = engine()   # docker.DockerClient, or EngineUnavailable saying what is wrong and how to fix it
"""
from __future__ import annotations

import os
from typing import Any


class EngineUnavailable(Exception):
    """No Docker engine answered; the message says where we looked and how to fix it."""


def engine(timeout: float = 60.0) -> Any:
    """A docker.DockerClient that answered a ping (from DOCKER_HOST, else the default socket)."""
    try:
        import docker
    except ImportError as e:
        raise EngineUnavailable("the docker SDK is not installed: pip install 'docker>=7' "
                                "(it comes with chaoskit's dependencies; run make setup)") from e
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except Exception as e:  # DockerException, connection errors, a bad DOCKER_HOST: all mean "no engine"
        reason = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise EngineUnavailable(
            f"no Docker engine answers at {where} ({reason}). Start the engine (systemctl start docker, "
            "or dockerd), or point DOCKER_HOST at a running one; the local backend (--backend local) "
            "needs no engine") from None
    return client
