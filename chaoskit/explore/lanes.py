"""Clusters kept up between runs: a search affords as many runs as it saves bring-ups.

A `Lane` holds one cluster and runs one test at a time on it (the runner's `lane=`). It keeps the
cluster while the next test asks for the same one (backend, profile, node counts, node configs,
mutations included); each test brings its own topics and consumer group (explore renames them per
run), so nothing a run wrote is read by the next. Between runs the lane restores the cluster:
every proxy enabled and every toxic removed, every node running and none paused, a controller
elected, every broker registered and listing every other in its Metadata, the coordinators' topic
fully replicated and with as many partitions as it first had (a run that grew it, the guardrail
turned off, leaves a cluster unlike a new one), and the run's topics deleted. A cluster that does
not come back so is stopped and the next run starts a new one, so a fault's leftovers never reach
another verdict (tests/explore/test_explore_live.py holds a schedule to the same verdict on a fresh
and a reused cluster).
Each run gets the slice of every node log (and of each broker's log of what clients sent) written
while it ran, in its own folder, as a run on a cluster of its own would.
"""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from chaoskit.cluster.brokers import DEFAULT as DEFAULT_BROKER
from chaoskit.cluster.spec import new_run_id
from chaoskit.run.chaostest import ChaosTest, cluster_spec

log = logging.getLogger("chaoskit.explore")
HEALTHY_WITHIN_S = 45.0


def cluster_key(test: ChaosTest) -> str:
    """What makes two tests' clusters the same one."""
    spec = cluster_spec(test, "key", Path("."))
    return json.dumps([test.backend, test.broker, test.broker_storage, spec.profile, spec.brokers, spec.controllers,
                       spec.zookeepers, spec.broker_config, spec.controller_config], sort_keys=True, default=str)


class Lane:
    def __init__(self, root: Path, name: str = "lane-1") -> None:
        self.root, self.name = Path(root), name
        self.cluster: Any = None
        self.key: str | None = None
        self.runs = 0  # runs on the current cluster
        self.started = 0  # clusters started in all
        self._marks: dict[str, int] = {}
        self.offsets_partitions = 0  # the coordinators' topic's partition count in a new cluster

    # --- the runner's side -----------------------------------------------------------------------------
    def cluster_for(self, test: ChaosTest) -> Any:
        """The lane's cluster, started (or started anew) for `test`'s."""
        from chaoskit.pluginmanager import broker_kind

        key = cluster_key(test)
        if self.cluster is not None and key != self.key:
            self.close()
        if self.cluster is None:
            run_id = new_run_id()
            cluster = broker_kind(test.broker).new_cluster(test.backend, cluster_spec(test, run_id, self.root / run_id),
                                                           test)
            try:
                cluster.start()
            except BaseException:
                cluster.stop()
                raise
            self.cluster, self.key, self.runs = cluster, key, 0
            self.offsets_partitions = configured_offsets_partitions(cluster.spec)
            self.started += 1
        self.runs += 1
        self._marks = {str(path): _size(path) for path in self._logs()}
        return self.cluster

    def _logs(self) -> list[Path]:
        """Every node's log, and each broker's log of what clients sent (findings quote it)."""
        logs = [Path(n.log_path) for n in self.cluster.nodes]
        return logs + [n.home / "requests.log" for n in self.cluster.brokers.values() if hasattr(n, "home")]

    def done(self, test: ChaosTest, run_dir: Path) -> None:
        """After a run: its slice of the node logs into its folder, then the cluster restored for the
        next (or stopped, when it does not come back healthy)."""
        self._copy_logs(Path(run_dir))
        if test.broker != DEFAULT_BROKER:
            # kept only where restoring it is known sound (chaoskit's own: its topics deleted, its nodes
            # checked); another broker starts afresh for every run (tansu in under a second)
            self.close()
            return
        try:
            self.restore([t.name for t in test.topics])
        except Exception as e:  # noqa: BLE001 -- any trouble: the next run gets a fresh cluster
            log.warning("%s: the cluster did not come back healthy (%s); the next run starts a new one", self.name, e)
            self.close()

    def _copy_logs(self, run_dir: Path) -> None:
        """Each log's part written during the run, where a run of its own keeps it (the node logs in
        the run's folder, a broker's requests.log in its node's folder)."""
        for path in self._logs():
            where = run_dir / path.relative_to(self.cluster.run_dir)
            try:
                with path.open("rb") as f:
                    f.seek(self._marks.get(str(path), 0))
                    where.parent.mkdir(parents=True, exist_ok=True)
                    where.write_bytes(f.read())
            except (OSError, ValueError):
                continue

    # --- restoring -------------------------------------------------------------------------------------
    def restore(self, topics: list[str]) -> None:
        """Every node up and the cluster as a new one would be, but for other runs' data."""
        from chaoskit.client.admin import AdminClient
        from chaoskit.protocol.topics import OFFSETS_TOPIC

        cluster = self.cluster
        cluster.proxies.reset()  # every link enabled, every toxic removed
        for node in cluster.nodes:
            if node.paused:
                node.resume()
            if not node.running:
                node.start(clean=False)
        cluster.wait_for_controller(HEALTHY_WITHIN_S)
        for broker in cluster.brokers.values():
            cluster.wait_for_metadata(broker, HEALTHY_WITHIN_S)
        offsets = cluster.view.assignment(OFFSETS_TOPIC)
        if offsets:
            # a run that grew the coordinators' topic (the guardrail turned off) would hand the next
            # runs a cluster unlike a new one: their groups placed by another count
            if len(offsets) != self.offsets_partitions:
                raise RuntimeError(f"{OFFSETS_TOPIC} has {len(offsets)} partitions, not {self.offsets_partitions}")
            cluster.wait_until_replicated(OFFSETS_TOPIC, HEALTHY_WITHIN_S)
        with AdminClient(cluster.bootstrap_servers) as admin:
            gone = admin.delete_topics(topics)
        failed = {t: r.name for t, r in gone.items() if not r.ok and r.name != "UNKNOWN_TOPIC_OR_PARTITION"}
        if failed:
            raise RuntimeError(f"deleting the run's topics: {failed}")

    def close(self) -> None:
        """Stop the cluster and remove its data (each run already has its share of the logs)."""
        if self.cluster is not None:
            try:
                self.cluster.stop()
            finally:
                shutil.rmtree(self.cluster.run_dir, ignore_errors=True)
                self.cluster, self.key = None, None


def configured_offsets_partitions(spec: Any) -> int:
    """The count a new cluster gives the coordinators' topic (its brokers' offsets.topic.num.partitions):
    what the lane holds every run to, the first one included (a run that grew the topic leaves it
    grown, and the next runs would meet groups placed by another count)."""
    from chaoskit.broker.config import BrokerConfig

    given = spec.broker_config.get("offsets.topic.num.partitions")
    return int(given) if given is not None else BrokerConfig.offsets_topic_num_partitions


def _size(path: Any) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0
