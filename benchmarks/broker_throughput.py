"""Broker throughput and cluster bring-up time on this machine.

Starts a local cluster (1 ZooKeeper, 1 controller, 3 brokers), creates a 3-partition topic with
replication factor 3, and sends 1 KiB records with kafka-python (acks=all, idempotent) as fast as
the producer goes, then reads them back with a consumer. Prints the bring-up time, records/s and
MB/s for both. Usage: python benchmarks/broker_throughput.py [--records N] [--seed S]
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import ClusterSpec
from chaoskit.cluster.waiting import wait_for

RECORD_BYTES = 1024
TOPIC = "bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    payload = random.Random(args.seed).randbytes(RECORD_BYTES)
    mb = args.records * RECORD_BYTES / 1e6

    with tempfile.TemporaryDirectory(prefix="chaoskit-bench-") as tmp:
        spec = ClusterSpec(brokers=3, controllers=1, run_dir=Path(tmp) / "run")
        began = time.monotonic()
        with LocalCluster(spec) as cluster:
            print(f"bring-up: {time.monotonic() - began:.2f} s (3 brokers, 1 controller, 1 ZooKeeper)")
            admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
            admin.create_topics([NewTopic(TOPIC, 3, 3)])
            admin.close()
            wait_for(lambda: all((s := cluster.view.state(TOPIC, p)) and len(s.isr) == 3 for p in range(3)),
                     30, "the topic's partitions with a full ISR")

            producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                                     enable_idempotence=True, linger_ms=5, batch_size=256 * 1024)
            start = time.monotonic()
            for i in range(args.records):
                producer.send(TOPIC, key=str(i % 1000).encode(), value=payload)
            producer.flush()
            took = time.monotonic() - start
            producer.close()
            print(f"produce (acks=all, RF=3): {args.records / took:,.0f} records/s, {mb / took:.1f} MB/s "
                  f"({args.records:,} x {RECORD_BYTES} B in {took:.2f} s)")

            consumer = KafkaConsumer(TOPIC, bootstrap_servers=cluster.bootstrap_servers,
                                     auto_offset_reset="earliest", enable_auto_commit=False,
                                     consumer_timeout_ms=30_000, fetch_max_bytes=8 << 20)
            start, seen = time.monotonic(), 0
            for _ in consumer:
                seen += 1
                if seen == args.records:
                    break
            took = time.monotonic() - start
            consumer.close()
            print(f"consume: {seen / took:,.0f} records/s, {seen * RECORD_BYTES / 1e6 / took:.1f} MB/s "
                  f"({seen:,} records in {took:.2f} s)")


if __name__ == "__main__":
    main()
