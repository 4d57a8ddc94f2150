"""Acknowledged writes are never lost: Kafka's own promise, for any Kafka-compatible broker.

Producers write keyed records with acks=all (every client here does) while a consumer group
reads a little slower than they write, so that at any moment some acknowledged records are not
yet read. Meanwhile brokers are killed (kill -9) and restarted with their data. Where the broker
keeps its data in a storage service of its own (tansu over PostgreSQL), that service is killed
and restarted too, and each broker's path to it is cut for a while. The checks are the ones loss
shows in: `lost-write` (an acknowledged write skipped while later ones were read), `unseen` (an
acknowledged write never read by the end) and `inconsistent-offsets` (an acknowledged offset that
came to hold another record).

On chaoskit's own broker the replicas keep what was acknowledged. On tansu over SQLite or
PostgreSQL a restarted broker reads its data back. tansu's memory engine keeps nothing across a
restart, by design: the killed broker comes back without the topic and the records the consumers
had not read yet, and the run reports them (`--chaos-broker tansu --chaos-broker-storage memory
-k durability` fails, with `unseen` or `lost-write` in its results.json: the checks see a foreign
broker lose data).
"""
from __future__ import annotations

import pytest

from chaoskit import mix
from chaoskit.cluster import capabilities as caps
from chaoskit.history.reader import History
from chaoskit.run.mixes import lagging_group_run

CHECKS = ["lost-write", "unseen", "inconsistent-offsets"]
# two kills (kill -9, restarted with its data 1.5 s later) of a broker, the second once the first one's
# broker is back: on a one-broker cluster (tansu over SQLite) the same broker twice. The first comes
# early enough that the consumers, reading slower than the producers write, have acknowledged
# records left to read (what a broker that forgets them loses)
KILLS = [{"at": at, "fault": "kill", "target": "random-broker", "window_s": 1.5} for at in (0.3, 0.6)]
# then the storage server killed and restarted, or cut off from every broker, or one broker cut off
# from it and from its clients
STORAGE_FAULTS = {"kill": {"weight": 1, "targets": ["storage"], "window_s": [1.0, 2.0]},
                  "partition": {"weight": 2, "targets": ["storage", "random-broker"], "window_s": [1.0, 3.0]}}
# a broker paused for 12 s (longer than the clients' 10 s request timeout: they ask the others), then resumed
PAUSE = [{"at": 0.2, "fault": "pause", "target": "random-broker", "window_s": 12.0}]
# what the claim needs: records acknowledged and read on both sides of the faults
READ = {"lost-write": {"acked_read": 50}}
AFTER_FAULTS = 50  # acknowledged writes completed after the first fault began


def expect_durable(chaos, result) -> None:
    """The claim, and writes acknowledged once the faults had begun: a run whose producers all
    stopped at the first fault judged only what came before it, and proves nothing about the faults."""
    chaos.expect(result, evidence=READ)
    ops = History.from_path(result.history).ops
    began = min((op["index"] for op in ops if op.get("process") == "nemesis" and op.get("f") == "start"), default=None)
    after = sum(op.get("f") == "send" and op.get("type") == "ok" and op["index"] > began for op in ops) \
        if began is not None else 0
    if after < AFTER_FAULTS:
        pytest.fail(f"verdict unknown: the run did not exercise what this claim needs (acknowledged writes after "
                    f"the first fault began {after} < {AFTER_FAULTS}), so its verdict proves nothing\n"
                    + "\n".join(f"replay: {r}" for r in result.replays), pytrace=False)


@pytest.mark.chaos(workload="keyed-sequences", duration=20, profiles=("patched",), guarantee="kafka-durability",
                   epic="Kafka", feature="durability")
def test_acknowledged_writes_survive_broker_kills(chaos):
    expect_durable(chaos, lagging_group_run(chaos, CHECKS, mix(KILLS, {})))


@pytest.mark.chaos_needs(caps.STORAGE)
@pytest.mark.chaos(workload="keyed-sequences", duration=24, profiles=("patched",), guarantee="kafka-durability",
                   epic="Kafka", feature="durability")
def test_acknowledged_writes_survive_storage_faults(chaos):
    expect_durable(chaos, lagging_group_run(chaos, CHECKS, mix(KILLS[:1], STORAGE_FAULTS, mean_interval_s=5.0)))


@pytest.mark.nightly  # CI pauses brokers in other suites
@pytest.mark.chaos(workload="keyed-sequences", duration=24, profiles=("patched",), guarantee="kafka-durability",
                   epic="Kafka", feature="durability")
def test_acknowledged_writes_survive_a_paused_broker(chaos):
    expect_durable(chaos, lagging_group_run(chaos, CHECKS, mix(PAUSE, {})))
