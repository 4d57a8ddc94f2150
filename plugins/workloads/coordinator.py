"""The `coordinator-probe` workload: which broker coordinates each group, asked of every broker.

Process p asks broker p+1 (FindCoordinator) for groups g0..g<groups-1> in turn, `rate` questions
a second. Each answer is an op `coordinator` with value {"group", "node", "asked"}: two brokers
naming different coordinators for one group at the same time is the split brain of KAFKA-20029
(the `coordinator-split` check). It writes nothing, so the run's other checks have nothing to say.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.history.schema import Op
from chaoskit.roles import PENDING, Pending


@dataclass
class CoordinatorProbe:
    brokers: int = 3
    groups: int = 8
    rate: float = 20.0  # questions per second per process
    duration_s: float = 30.0
    seed: int = 0
    topic: str = "orders"  # unused: the probe asks about groups, not topics
    _asked: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.brokers < 1 or self.groups < 1 or self.rate <= 0:
            raise ValueError(f"coordinator-probe: brokers, groups and rate must be positive, got "
                             f"{self.brokers}, {self.groups}, {self.rate}")

    @property
    def processes(self) -> dict[str, list[int]]:
        return {"probe": list(range(self.brokers))}

    def op(self, process: int, elapsed_s: float) -> Op | Pending | None:
        if elapsed_s >= self.duration_s:
            return None
        asked = self._asked.get(process, 0)
        if asked >= elapsed_s * self.rate:
            return PENDING
        self._asked[process] = asked + 1
        return {"f": "coordinator", "node": process + 1, "value": {"group": f"g{asked % self.groups}"}}

    def drain_op(self, process: int) -> Op | None:
        return None  # nothing was written, nothing to read back


def coordinator_probe(**options: Any) -> CoordinatorProbe:
    return CoordinatorProbe(**options)
