"""The docker reaper: `python -m chaoskit.cluster.docker_reaper --run-id ID --parent-pid PID`.

testcontainers' Ryuk for chaoskit: started detached beside a docker-backend cluster, it waits for
the runner to die, however it dies (kill -9 included), waits a grace period, then removes every
container and network labelled chaoskit.run=<id>. A SIGTERM (the runner stopping cleanly) reaps at
once and exits.
"""
from __future__ import annotations

import sys
import time
from typing import Any

from chaoskit.cluster.docker_nodes import RUN_LABEL
from chaoskit.cluster import reaper

GRACE_S = 1.0


def leftovers(client: Any, run_id: str) -> tuple[list[Any], list[Any]]:
    """The run's containers (any state) and networks still on the engine."""
    label = {"label": f"{RUN_LABEL}={run_id}"}
    return client.containers.list(all=True, filters=label), client.networks.list(filters=label)


def reap(client: Any, run_id: str, rounds: int = 5) -> tuple[int, int]:
    """Force-remove the run's containers, then its networks; (containers, networks) removed."""
    removed = [0, 0]
    for _ in range(rounds):
        containers, networks = leftovers(client, run_id)
        if not containers and not networks:
            break
        for c in containers:
            try:
                c.remove(force=True)
                removed[0] += 1
            except Exception as e:  # already gone, or being removed: the next round sees
                print(f"chaoskit docker reaper: removing {c.name}: {e}", file=sys.stderr)
        for n in networks:
            try:
                n.remove()
                removed[1] += 1
            except Exception as e:  # still has endpoints: the next round retries
                print(f"chaoskit docker reaper: removing network {n.name}: {e}", file=sys.stderr)
        time.sleep(0.5)  # between rounds only: the engine finishing a removal
    return removed[0], removed[1]


def watch(run_id: str, parent_pid: int, grace: float) -> int:
    import docker

    client = docker.from_env()
    if not reaper.wait_parent(parent_pid):
        time.sleep(grace)  # the grace period: the runner's own teardown, if any, goes first
    containers, networks = reap(client, run_id)
    if containers or networks:
        print(f"chaoskit docker reaper: run {run_id}: removed {containers} container(s) and {networks} "
              "network(s) left behind", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = reaper.parser("chaoskit.cluster.docker_reaper",
                           "Remove a run's containers and networks once its runner is gone.")
    parser.add_argument("--grace", type=float, default=GRACE_S, help="seconds to wait after the runner died")
    args = parser.parse_args(argv)
    return watch(args.run_id, args.parent_pid, args.grace)


if __name__ == "__main__":
    sys.exit(main())
