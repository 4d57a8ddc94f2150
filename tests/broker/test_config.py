"""BrokerConfig and `python -m chaoskit.broker`'s start-up errors: a bad config or a port in use
exits with code 2 and one line naming the key or the address and what to do."""
from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from chaoskit.broker.config import BrokerConfig, ConfigError

MINIMAL = {"broker.id": 1, "listeners": "127.0.0.1:9092", "log.dirs": "/tmp/x", "zookeeper.connect": "127.0.0.1:2181"}


def test_defaults_follow_the_contract():
    c = BrokerConfig.from_dict(MINIMAL)
    assert c.advertised == c.listener == ("127.0.0.1", 9092)
    assert (c.replica_lag_time_max_ms, c.min_insync_replicas, c.leader_epoch_fencing_enable) == (10000, 1, True)
    assert c.offsets_topic_replication_factor is None and c.peer_addresses == {}
    # KIP-694's two keys: the check interval's default is the KIP's 300000 (5 minutes)
    assert (c.delete_topic_partition_enable, c.delete_topic_partition_interval_delay_ms) == (True, 300000)
    c = BrokerConfig.from_dict({**MINIMAL, "advertised.listeners": "PLAINTEXT://127.0.0.5:7000",
                                "peer.addresses": {"2": "127.0.0.1:7002"}, "leader.epoch.fencing.enable": "false"})
    assert c.advertised == ("127.0.0.5", 7000) and c.peer_addresses == {2: ("127.0.0.1", 7002)}
    assert c.leader_epoch_fencing_enable is False
    assert c.peer_address(2, ("10.0.0.1", 1)) == ("127.0.0.1", 7002) and c.peer_address(3, None) is None


@pytest.mark.parametrize("change,words", [
    ({"broker.idd": 1}, ["unknown key", "'broker.idd'"]),
    ({"listeners": "127.0.0.1:0"}, ["listeners", "port 0 is refused"]),
    ({"listeners": "localhost"}, ["listeners", "host:port"]),
    ({"min.insync.replicas": 0}, ["min.insync.replicas", "allowed 1"]),
    ({"leader.epoch.fencing.enable": "maybe"}, ["leader.epoch.fencing.enable", "true or false"]),
    ({"peer.addresses": {"x": "h:1"}}, ["peer.addresses", "not a broker id"]),
    ({"peer.addresses": {"1": "127.0.0.1:5"}}, ["own id 1"]),
    ({"log.dirs": None}, ["log.dirs is required"]),
    ({"log.cleanup.policy": "compact,forever"}, ["log.cleanup.policy", "compact,delete", "'compact,forever'"]),
])
def test_bad_values_name_the_key(change, words):
    raw = {k: v for k, v in {**MINIMAL, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as e:
        BrokerConfig.from_dict(raw)
    for w in words:
        assert w in str(e.value)


def run_broker(config_path, timeout=30):
    return subprocess.run([sys.executable, "-m", "chaoskit.broker", "--config", str(config_path)],
                          capture_output=True, text=True, timeout=timeout)


def test_the_process_exits_2_on_a_bad_config(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({**MINIMAL, "num.partitions": -3}))
    done = run_broker(path)
    assert done.returncode == 2 and "num.partitions" in done.stderr and "READY" not in done.stdout
    path.write_text("{not json")
    done = run_broker(path)
    assert done.returncode == 2 and "not valid JSON" in done.stderr


def test_the_process_exits_2_when_its_port_is_taken(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        path = tmp_path / "b.json"
        path.write_text(json.dumps({**MINIMAL, "listeners": f"127.0.0.1:{port}", "log.dirs": str(tmp_path / "d")}))
        done = run_broker(path)
    assert done.returncode == 2
    assert f"127.0.0.1:{port}" in done.stderr and "choose a free port" in done.stderr
