"""The mutations (chaoskit.protocol.mutations): each names one element, a part and suites that
exist; each part refuses a name it does not implement, in its config or options."""
from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.broker.config import BrokerConfig
from chaoskit.client.routing import Router
from chaoskit.controller.config import ControllerConfig
from chaoskit.controller.topic_changes import removal_delay
from chaoskit.protocol.mutations import BROKER, CLIENT, CONTROLLER, MUTATIONS, checked, mutation_names
from chaoskit.protocol.node_config import ConfigError

SUITES = Path(__file__).resolve().parents[2] / "suites"
BROKER_BASE = {"broker.id": 1, "listeners": "127.0.0.1:9092", "log.dirs": "/tmp/x", "zookeeper.connect": "127.0.0.1:2181"}
CONTROLLER_BASE = {"controller.id": 1, "zookeeper.connect": "127.0.0.1:2181"}


def test_every_mutation_names_a_part_and_suites_that_exist():
    suites = {p.stem.removeprefix("test_") for p in SUITES.glob("test_*.py")}
    for m in MUTATIONS.values():
        assert m.part in (BROKER, CONTROLLER, CLIENT) and m.suites and set(m.suites) <= suites, m
    assert sorted(mutation_names(BROKER) + mutation_names(CONTROLLER) + mutation_names(CLIENT)) == sorted(MUTATIONS)


def test_each_part_takes_only_its_own_mutations():
    assert BrokerConfig.from_dict({**BROKER_BASE, "mutations": ["fetch-epoch-fencing"]}).mutations == \
        {"fetch-epoch-fencing"}
    with pytest.raises(ConfigError, match="unknown mutation.*guardrail"):
        BrokerConfig.from_dict({**BROKER_BASE, "mutations": "guardrail"})
    with pytest.raises(ValueError, match="no mutation of the client named fetch-epoch-fencing"):
        checked(["fetch-epoch-fencing"], CLIENT)


def test_the_guardrail_mutation_is_the_unstable_switch_turned_on():
    assert not ControllerConfig.from_dict(CONTROLLER_BASE).allow_internal_partition_increase
    assert ControllerConfig.from_dict({**CONTROLLER_BASE, "mutations": ["guardrail"]}).allow_internal_partition_increase


def test_deletion_mutations_remove_at_once_what_would_wait():
    assert removal_delay(5000, frozenset()) == 5000 and removal_delay(None, frozenset()) is None
    assert removal_delay(5000, frozenset({"delayed-deletion"})) == 0
    assert removal_delay(None, frozenset({"delayed-deletion"})) is None  # KIP-253's drain is another element
    assert removal_delay(None, frozenset({"drained-deletion"})) == 0


def test_without_linear_hashing_keys_are_placed_by_modulo_of_the_count():
    from chaoskit.client.admin import PartitionInfo, TopicInfo
    from chaoskit.client.linear_hash import linear_partition, modulo_partition

    info = TopicInfo("t", 0, {p: PartitionInfo(p, 1, 0, (1,), (1,)) for p in range(6)}, 4, 6)
    keys = [f"k{i}".encode() for i in range(200)]
    linear = [Router().partition(info, k) for k in keys]
    modulo = [Router(linear_hashing=False).partition(info, k) for k in keys]
    assert linear == [linear_partition(k, 4, 6) for k in keys] and modulo == [modulo_partition(k, 6) for k in keys]
    assert linear != modulo
