"""A lane's restore, on a stand-in cluster: what it holds every run to."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from chaoskit.explore import lanes
from chaoskit.explore.lanes import Lane
from chaoskit.explore.steps import default_base


class GrownCluster:
    """A cluster whose coordinators' topic a run grew from 5 partitions to 6 (the guardrail off)."""

    def __init__(self, spec: Any) -> None:
        self.spec, self.run_dir, self.stopped = spec, spec.run_dir, False
        self.proxies = SimpleNamespace(reset=lambda: None)
        self.nodes: list[Any] = []
        self.brokers: dict[int, Any] = {}
        self.view = SimpleNamespace(assignment=lambda topic: list(range(6)))

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self.stopped = True

    def wait_for_controller(self, within_s: float) -> None:
        pass


def test_a_first_run_that_grew_the_coordinators_topic_hands_no_run_its_cluster(tmp_path: Path, monkeypatch):
    """Held to the count a new cluster has, not to what the first run left: the lane stops the
    cluster, and the next run gets a new one."""
    monkeypatch.setattr("chaoskit.cluster.backends.new_cluster", lambda backend, spec: GrownCluster(spec))
    monkeypatch.setattr(lanes.Lane, "_logs", lambda self: [])
    lane = Lane(tmp_path)
    test = default_base()
    cluster = lane.cluster_for(test)
    assert lane.offsets_partitions == 5
    lane.done(test, tmp_path / "run-1")
    assert cluster.stopped and lane.cluster is None
