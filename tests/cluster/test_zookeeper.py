"""Real ZooKeeper from the Debian package: standalone and a quorum of three, crash and restart, pause."""
from __future__ import annotations

import socket
from pathlib import Path

import psutil
import pytest
from kazoo.client import KazooClient

from chaoskit.cluster.node import RUN_ID_ENV
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.cluster.zookeeper import ZkPorts, ZooKeeperEnsemble, ZooKeeperNode, four_letter_word


def kazoo(connect: str) -> KazooClient:
    client = KazooClient(hosts=connect, timeout=4.0)
    client.start(timeout=15)
    return client


def test_standalone_serves_keeps_data_across_kill_and_is_labelled(tmp_path: Path):
    with ZooKeeperEnsemble(1, "run-zk-1", tmp_path) as zk:
        node = zk.nodes[0]
        assert node.mode() == "standalone"
        assert four_letter_word(node.host, node.ports.client, "ruok") == "imok"
        cfg = node.config_path.read_text()
        assert "admin.enableServer=false" in cfg and f"dataDir={node.data_dir}" in cfg
        proc = psutil.Process(node.pid)
        assert proc.environ()[RUN_ID_ENV] == "run-zk-1"
        assert "-Dchaoskit.run.id=run-zk-1" in proc.cmdline()

        client = kazoo(zk.connect_string)
        try:
            client.create("/kept", b"v1", makepath=True)
        finally:
            client.stop()
        node.kill()
        assert node.mode() is None
        node.start(clean=False)  # a crash restart keeps the data dir
        client = kazoo(zk.connect_string)
        try:
            assert client.get("/kept")[0] == b"v1"
        finally:
            client.stop()
    assert not node.running


def answers(node: ZooKeeperNode) -> bool:
    try:
        four_letter_word(node.host, node.ports.client, "srvr", timeout=0.5)
        return True
    except OSError:
        return False


def test_quorum_of_three_survives_one_loss_and_a_paused_node_stops_answering(tmp_path: Path):
    with ZooKeeperEnsemble(3, "run-zk-3", tmp_path) as zk:
        modes = sorted(n.mode() or "" for n in zk.nodes)
        assert modes == ["follower", "follower", "leader"]
        leader = zk.leader()
        assert leader is not None
        leader.kill()
        # the two left elect a new leader and keep serving writes
        wait_for(lambda: zk.leader(), 30, "a new ZooKeeper leader", leader.log_path)
        client = kazoo(zk.connect_string)
        try:
            client.create("/after-loss", b"x")
            follower = next(n for n in zk.nodes if n.running and n is not zk.leader())
            follower.pause()
            wait_for(lambda: not answers(follower), 15, f"paused {follower.name} to stop answering", follower.log_path)
            follower.resume()
            wait_for(follower.mode, 15, "the thawed follower answering", follower.log_path)
        finally:
            client.stop()
        leader.start(clean=False)
        wait_for(lambda: leader.mode() == "follower", 30, "the old leader rejoining", leader.log_path)


def test_port_in_use_is_a_clear_error(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        node = ZooKeeperNode(1, "run-zk-clash", tmp_path, ZkPorts(port, 0, 0))
        node.ready_timeout = 20
        try:
            with pytest.raises(NotReady) as err:
                node.start()
        finally:
            node.stop()
    assert node.address_in_use(), "ZooKeeper's log must say the address is in use"
    assert "zookeeper-1" in str(err.value)
