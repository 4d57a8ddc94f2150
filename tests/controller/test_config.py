"""ControllerConfig and `python -m chaoskit.controller`'s start-up errors: defaults, refusals naming
the key, failpoints, and exit code 2 on a bad config."""
from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.controller.config import ControllerConfig
from chaoskit.protocol.node_config import ConfigError


def test_config_defaults_and_refusals(tmp_path: Path):
    cfg = ControllerConfig.from_dict({"controller.id": 1, "zookeeper.connect": "127.0.0.1:2181",
                                      "broker.addresses": {"2": "127.0.0.1:7000"}})
    assert cfg.request_timeout_ms == 5000 and not cfg.unclean_leader_election_enable
    # KIP-694: the deletion task checks every 300000 ms (5 minutes) unless told otherwise
    assert (cfg.delete_topic_partition_enable, cfg.delete_topic_partition_interval_delay_ms) == (True, 300000)
    assert ControllerConfig.from_dict({"controller.id": 1, "zookeeper.connect": "h:1",
                                       "delete.topic.partition.interval.delay.ms": 1000}
                                      ).delete_topic_partition_interval_delay_ms == 1000
    assert cfg.broker_address(2, ("127.0.0.1", 1)) == ("127.0.0.1", 7000)
    assert cfg.broker_address(3, ("127.0.0.1", 1)) == ("127.0.0.1", 1)
    with pytest.raises(ConfigError, match="unknown key.*'controler.id'"):
        ControllerConfig.from_dict({"controler.id": 1, "zookeeper.connect": "h:1"})
    with pytest.raises(ConfigError, match="controller.id is required"):
        ControllerConfig.from_dict({"zookeeper.connect": "h:1"})
    with pytest.raises(ConfigError, match="unclean.leader.election.enable: expected true or false"):
        ControllerConfig.from_dict({"controller.id": 1, "zookeeper.connect": "h:1",
                                    "unclean.leader.election.enable": "yes"})


def test_the_process_refuses_a_bad_config_with_exit_code_2(controller_cli):
    code, err = controller_cli({"controller.id": 1, "zookeeper.connect": "127.0.0.1:notaport"})
    assert code == 2 and "zookeeper.connect" in err and "host:port" in err
    code, err = controller_cli("{broken")
    assert code == 2 and "not valid JSON" in err


def test_failpoints_config():
    base = {"controller.id": 1, "zookeeper.connect": "h:1"}
    assert ControllerConfig.from_dict(base).failpoints == frozenset()
    cfg = ControllerConfig.from_dict({**base, "controller.failpoints": "expansion.after-create, bump.after-first"})
    assert cfg.failpoints == {"expansion.after-create", "bump.after-first"}
    with pytest.raises(ConfigError, match="unknown failpoint\\(s\\) nowhere; known: bump.after-first"):
        ControllerConfig.from_dict({**base, "controller.failpoints": "nowhere"})
    assert not ControllerConfig.from_dict(base).allow_internal_partition_increase  # KAFKA-20029's default
