"""The coordinator-probe workload: each process asks its broker about every group in turn, paced."""
from __future__ import annotations

import pytest

from chaoskit.roles import PENDING
from chaoskit_plugins.workloads.coordinator import CoordinatorProbe


def test_each_process_asks_its_own_broker_about_the_groups_in_turn_at_its_pace():
    w = CoordinatorProbe(brokers=3, groups=2, rate=10, duration_s=5)
    assert w.processes == {"probe": [0, 1, 2]}
    ops = [w.op(1, 1.0) for _ in range(12)]
    asked = [o for o in ops if o is not PENDING]
    assert len(asked) == 10  # 10 a second, one second in
    assert {o["node"] for o in asked} == {2} and [o["value"]["group"] for o in asked[:3]] == ["g0", "g1", "g0"]
    assert w.op(1, 5.0) is None and w.drain_op(1) is None


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="positive"):
        CoordinatorProbe(groups=0)
