"""ChaosTest as data: test.json round trip with the chaoskit version that wrote it, unknown fields
refused, and the cluster spec and schedule derived from it alike for every way of starting a run."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoskit import __version__
from chaoskit.run.chaostest import FAST_BROKER, VERSION_KEY, ChaosTest, Topic, cluster_spec, schedule_for
from chaoskit.run.mixes import LEADER_ISOLATION, admin_step, mix


def test_test_json_round_trips_and_records_the_version():
    test = ChaosTest("x", seed=3, topics=[Topic("a", 2, config={"retention.ms": "1000"})],
                     faults=mix([admin_step(0.5, "expand", 4, topic="a")], LEADER_ISOLATION))
    data = json.loads(json.dumps(test.to_json()))
    assert data[VERSION_KEY] == __version__
    assert ChaosTest.from_json(data) == test
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['colour'\]"):
        ChaosTest.from_json({**data, "colour": "red"})


def test_the_cluster_spec_and_schedule_come_from_the_test():
    test = ChaosTest("x", profile="unpatched", seed=3, brokers=4, broker_config={"replica.lag.time.max.ms": 9000},
                     faults=mix([], LEADER_ISOLATION), duration_s=12)
    spec = cluster_spec(test, "r1", Path("/tmp/r1"))
    assert (spec.brokers, spec.profile, spec.seed, spec.proxied) == (4, "unpatched", 3, True)
    assert spec.broker_config == {**FAST_BROKER, "replica.lag.time.max.ms": 9000}  # the test's own wins
    assert schedule_for(test).to_json() == schedule_for(ChaosTest.from_json(test.to_json())).to_json()
    assert schedule_for(ChaosTest("control")) is None


def test_a_topics_ordered_delivery_is_its_config_true_unless_set_false():
    assert Topic("a").ordered_delivery and Topic("b", config={"enable.ordered.delivery": "TRUE"}).ordered_delivery
    assert not Topic("c", config={"enable.ordered.delivery": "false"}).ordered_delivery
    back = ChaosTest.from_json(ChaosTest("t", topics=[Topic("c", config={"enable.ordered.delivery": "false"})]).to_json())
    assert [t.ordered_delivery for t in back.topics] == [False]
