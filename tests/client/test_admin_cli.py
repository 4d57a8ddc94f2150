"""`chaoskit admin` and the AdminClient behind it: argument refusals (exit 3), then expand, shrink
and describe against a running 3-broker cluster through the real `chaoskit` command, and its
refusals (exit 3, bad input, with the broker's error: 1 would read as an anomaly found)."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaoskit.cli import main
from chaoskit.client.admin import AdminClient, AdminError, parse_bootstrap
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import ClusterSpec
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode


@pytest.mark.parametrize("argv,message", [
    (["admin", "expand", "t", "--to", "0", "--bootstrap-server", "h:1"], "'0' is not a partition count"),
    (["admin", "shrink", "t", "--to", "2", "--delay-ms", "-5", "--bootstrap-server", "h:1"], "not a delay in ms"),
    (["admin", "describe", "t", "--bootstrap-server", "nohost"], "is not host:port"),
    (["admin", "expand", "t", "--bootstrap-server", "h:1"], "--to"),
])
def test_bad_arguments_exit_3_naming_the_problem(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 3 and message in capsys.readouterr().err


def test_bootstrap_parsing():
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    with pytest.raises(ValueError, match="'a:99999' is not host:port"):
        parse_bootstrap("a:99999")


def test_no_broker_answering_is_bad_input(capsys):
    assert main(["admin", "describe", "t", "--bootstrap-server", "127.0.0.1:1"]) == 3
    assert "no bootstrap broker answered" in capsys.readouterr().err


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    spec = ClusterSpec(brokers=3, controllers=1, run_dir=tmp_path_factory.mktemp("run"),
                       broker_config={"zookeeper.session.timeout.ms": 4000, "replica.fetch.wait.max.ms": 200},
                       controller_config={"zookeeper.session.timeout.ms": 4000,
                                          "delete.topic.partition.interval.delay.ms": 300})
    cluster = LocalCluster(spec)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def chaoskit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chaoskit.cli", *args], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])


def test_expand_shrink_and_describe_a_live_topic(cluster: LocalCluster):
    server = cluster.bootstrap_servers.split(",")[1]
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topic("cli", 3, 3)
    cluster.wait_until_replicated("cli")

    grown = chaoskit("admin", "expand", "cli", "--to", "6", "--bootstrap-server", server)
    assert grown.returncode == 0, grown.stderr
    assert grown.stdout.strip() == "cli: 6 partitions (undeleted 6, initial 3)"

    described = chaoskit("admin", "describe", "cli", "--json", "--bootstrap-server", server)
    assert described.returncode == 0, described.stderr
    topic = json.loads(described.stdout)
    assert (topic["initial_partition_count"], topic["undeleted_partition_count"]) == (3, 6)
    parts = {p["partition"]: p for p in topic["partitions"]}
    assert [parts[p]["leader_epoch"] for p in range(3)] == [1, 1, 1]
    assert parts[4]["leaderEpochAfterCreation"] == {"0": 0, "1": 0, "2": 0} and parts[4]["mode"] == "ReadWrite"

    shrunk = chaoskit("admin", "shrink", "cli", "--to", "4", "--delay-ms", "8000", "--bootstrap-server", server)
    assert shrunk.returncode == 0, shrunk.stderr
    assert "undeleted partitions now 4" in shrunk.stdout and "4 ReadOnly, 5 ReadOnly" in shrunk.stdout
    assert "WARNING" not in shrunk.stderr  # a topic with counts, nothing marked, the feature on
    table = chaoskit("admin", "describe", "cli", "--bootstrap-server", server).stdout  # within the delay
    assert "undeleted_partition_count 4" in table and "ReadOnly" in table and "leaderEpochBeforeDeletion" in table
    busy = chaoskit("admin", "expand", "cli", "--to", "8", "--bootstrap-server", server)  # still within the delay
    assert busy.returncode == 3 and busy.stderr.startswith("WARNING: The topic is currently under changes\n")

    with AdminClient(server) as admin:
        wait_for(lambda: sorted(admin.topic("cli").partitions) == [0, 1, 2, 3], 30, "partitions 4 and 5 removed")
        with pytest.raises(AdminError) as err:
            admin.shrink("cli", 2)
        assert err.value.code == ErrorCode.INVALID_PARTITIONS

    refused = chaoskit("admin", "shrink", "cli", "--to", "2", "--bootstrap-server", server)
    assert refused.returncode == 3 and "INVALID_PARTITIONS (37)" in refused.stderr
    assert "initial partition count 3" in refused.stderr
    missing = chaoskit("admin", "expand", "nope", "--to", "2", "--bootstrap-server", server)
    assert missing.returncode == 3 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr
