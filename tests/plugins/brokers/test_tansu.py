"""The tansu plugin: its command lines and storage URLs, chaoskit's PostgreSQL schema in a real
PostgreSQL server, and (where `make tansu` has built it) real tansu brokers: a stock client through
the proxies over SQLite, three brokers sharing one partition over PostgreSQL, and the memory engine's
loss of acknowledged writes reported by the durability suite."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit.cluster.spec import ClusterSpec
from chaoskit.run.chaostest import ChaosTest
from chaoskit_plugins.brokers import tansu
from chaoskit_plugins.brokers.postgres import PostgresNode

ROOT = Path(__file__).resolve().parents[3]
NOT_BUILT = tansu.unavailable()
needs_tansu = pytest.mark.skipif(NOT_BUILT is not None, reason=NOT_BUILT or "")


def test_a_broker_listens_on_its_port_and_sends_clients_to_its_proxy():
    cmd = tansu.command(("127.0.0.1", 4000), ("127.0.0.1", 5000), "sqlite://tansu.db", "c1", exe=Path("/x/tansu"))
    assert cmd == ["/x/tansu", "broker", "--listener-url", "tcp://127.0.0.1:4000", "--advertised-listener-url",
                   "tcp://127.0.0.1:5000", "--storage-engine", "sqlite://tansu.db", "--cluster-id", "c1"]
    assert tansu.storage_url("sqlite", Path("/d")) == "sqlite://tansu.db"  # relative: tansu doubles an absolute path
    assert tansu.storage_url("memory", Path("/d")) == "memory://tansu/"
    assert tansu.storage_url("postgres", Path("/d"), ("127.0.0.1", 6000)) == \
        "postgres://postgres:postgres@127.0.0.1:6000/tansu"
    with pytest.raises(ValueError, match="runs on sqlite, postgres, memory, not 's3'"):
        tansu.storage_url("s3", Path("/d"))


def test_not_built_says_to_run_make_tansu(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAOSKIT_TANSU_HOME", str(tmp_path))
    assert tansu.unavailable() == ("tansu 0.6.0 is not built on this machine: run `make tansu` once "
                                   "(15-20 minutes on 2 cores)")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tansu").write_text("")
    (tmp_path / "features").write_text("postgres\n")  # built without every engine: built again
    assert "run `make tansu`" in tansu.unavailable()


def test_chaoskits_schema_loads_into_a_real_postgresql_server(tmp_path):
    """Every table tansu's postgres engine queries, with the constraints its upserts need."""
    server = PostgresNode("schema-test", tmp_path)
    server.start()
    try:
        server.psql("create database tansu;")
        server.psql(Path(tansu.__file__).with_name("tansu_schema.sql").read_text(), "tansu")
        tables = set(server.psql("select table_name from information_schema.tables where table_schema = 'public';",
                                 "tansu").split())
        assert {"cluster", "topic", "topition", "watermark", "record", "header", "consumer_group",
                "consumer_offset", "producer", "producer_epoch", "producer_detail", "txn", "txn_detail"} <= tables
        # the upsert a broker runs at start needs the cluster's name unique
        server.psql("insert into cluster (name) values ('c') on conflict (name) do update set "
                    "last_updated = excluded.last_updated;" * 2, "tansu")
        assert server.psql("select count(*) from cluster;", "tansu").strip() == "1"
    finally:
        server.stop()


def _cluster(tmp_path: Path, storage: str, brokers: int):
    from chaoskit_plugins.brokers.tansu_cluster import TansuCluster

    spec = ClusterSpec(brokers=brokers, run_id=f"tansu-{storage}", run_dir=tmp_path, proxied=True)
    return TansuCluster("local", spec, ChaosTest("t", broker="tansu", broker_storage=storage, brokers=brokers))


@needs_tansu
def test_three_brokers_over_postgresql_write_one_partition_at_distinct_offsets(tmp_path):
    """Each producer bootstraps from its own broker (each names only itself); the offsets the three
    get for one partition never collide, and the database is reached through each broker's proxy."""
    from kafka import KafkaProducer

    from chaoskit.client.admin import AdminClient

    with _cluster(tmp_path, "postgres", 3) as cluster:
        with AdminClient(cluster.bootstrap_servers) as admin:
            admin.create_topic("orders", 1, 1, {})
        cluster.wait_until_replicated("orders")
        assert {"c-b1", "c-b2", "c-b3", "b1-st1", "b2-st1", "b3-st1"} <= set(cluster.router.links)
        offsets = []
        for b in cluster.brokers:
            producer = KafkaProducer(bootstrap_servers="%s:%d" % cluster.client_address(b), acks="all")
            offsets += [producer.send("orders", f"{b}-{i}".encode()).get(10).offset for i in range(30)]
            producer.close()
        assert sorted(offsets) == list(range(90))


@needs_tansu
@pytest.mark.parametrize("suite, case, anomalies", [
    ("durability", "broker_kills", {"unseen", "lost-write"}),
    ("group_offsets", "broker_kills", {"commit-regressed"})], ids=["acknowledged-writes", "committed-offsets"])
def test_the_memory_engine_forgets_and_the_generic_suites_report_it(tmp_path, suite, case, anomalies):
    """The foreign broker's unpatched side: killed and restarted, tansu's memory engine comes back
    without the topic and the group's commits; the run carries on and its results name what was lost."""
    reports = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "pytest", f"suites/test_{suite}.py", "-k", case,
                           "--chaos-broker=tansu", "--chaos-broker-storage=memory", "--chaos-client=kafka-python",
                           f"--chaos-reports={reports}", "--chaos-seed=3", "-p", "no:cacheprovider", "-q"],
                          cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert done.returncode == 1, done.stdout[-2000:]
    results = [json.loads(p.read_text()) for p in (reports / "runs").glob("*/results.json")]
    assert len(results) == 1
    verdict = results[0]["verdict"]["results"]
    assert {name for name in anomalies if verdict[name]["valid"] is False}, {k: v["counts"] for k, v in verdict.items()}
    assert "must check clean" in done.stdout and "--chaos-broker-storage=memory" in done.stdout


def _build(tmp_path: Path, path: str) -> subprocess.CompletedProcess:
    env = {"PATH": path, "HOME": str(tmp_path), "CHAOSKIT_TANSU_HOME": str(tmp_path / "home")}
    return subprocess.run(["bash", str(ROOT / "scripts" / "tansu.sh")], capture_output=True, text=True, env=env,
                          timeout=120)


def test_make_tansu_without_cargo_or_with_a_failing_build_says_what_to_do_in_one_line(tmp_path):
    done = _build(tmp_path, "/usr/bin:/bin")
    assert done.returncode == 3
    assert done.stderr.strip() == ("tansu: cargo is not installed: install Rust's toolchain with rustup, then run "
                                   "make tansu again")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "cargo").write_text("#!/bin/sh\necho '   Compiling tansu v0.6.0'\necho 'error: linker `cc` not found'\n"
                                "exit 101\n")
    (fake / "cargo").chmod(0o755)
    done = _build(tmp_path, f"{fake}:/usr/bin:/bin")
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the build failed (error: linker `cc` not found)" in lines[0], done.stderr
    assert "run make tansu again" in lines[0]
    assert not (tmp_path / "home" / "features").exists()  # a failed build is not taken for a built one
