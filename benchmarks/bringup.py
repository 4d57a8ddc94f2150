"""Bring-up time of the same cluster on both backends: local processes and docker containers.

The cluster is 3 brokers, 2 controllers and 1 ZooKeeper; bring-up is from `start()` to every broker
answering Metadata with every broker (the backends' own readiness). The docker images are checked
(built if their inputs changed) before the clock starts, and that check is timed on its own.
Prints each run, the median per backend and the ratio docker / local.
Usage: python benchmarks/bringup.py [--runs N] [--brokers B] [--controllers C] [--proxied]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from chaoskit.cluster.docker import DockerCluster
from chaoskit.cluster.docker_engine import engine
from chaoskit.cluster.images import build_images
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import ClusterSpec


def bring_up(kind: type[LocalCluster], spec: ClusterSpec, **extra: object) -> tuple[float, float]:
    """(seconds until ready, seconds to stop) of one cluster."""
    began = time.monotonic()
    cluster = kind(spec, **extra)  # type: ignore[arg-type]
    try:
        cluster.start()
        ready = time.monotonic() - began
    finally:
        began_stop = time.monotonic()
        cluster.stop()
    return ready, time.monotonic() - began_stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--controllers", type=int, default=2)
    parser.add_argument("--proxied", action="store_true", help="every path through the fault proxy")
    args = parser.parse_args()
    client = engine()
    began = time.monotonic()
    images = build_images(client)
    print(f"docker images checked in {time.monotonic() - began:.2f} s: {', '.join(images.values())}")
    shape = f"{args.brokers} brokers, {args.controllers} controllers, 1 ZooKeeper{', proxied' if args.proxied else ''}"
    results: dict[str, list[float]] = {"local": [], "docker": []}
    with tempfile.TemporaryDirectory(prefix="chaoskit-bringup-") as tmp:
        for i in range(args.runs):
            for backend in ("local", "docker"):  # interleaved, so load from elsewhere hits both alike
                spec = ClusterSpec(brokers=args.brokers, controllers=args.controllers, proxied=args.proxied,
                                   run_dir=Path(tmp) / f"{backend}-{i}")
                if backend == "local":
                    ready, stop = bring_up(LocalCluster, spec)
                else:
                    ready, stop = bring_up(DockerCluster, spec, images=images, client=client)
                results[backend].append(ready)
                print(f"run {i + 1} {backend:6s}: ready in {ready:6.2f} s, stopped in {stop:5.2f} s ({shape})")
    local, docker = statistics.median(results["local"]), statistics.median(results["docker"])
    print(f"median bring-up: local {local:.2f} s, docker {docker:.2f} s; docker/local = {docker / local:.2f}x")


if __name__ == "__main__":
    main()
