"""Ordered client (chaoskit.client) vs kafka-python 3.0 on the same cluster: records/s and ratios.

Starts a local cluster (1 ZooKeeper, 1 controller, 3 brokers, patched profile), one 4-partition
topic (RF 3) per client, and measures with 200-byte keyed records:

* synchronous sends (one acknowledged send at a time, as chaos workloads send): OrderedProducer.send
  vs KafkaProducer.send(...).get();
* batched sends: OrderedProducer.send_many vs KafkaProducer.send + flush (linger 5 ms);
* a one-member group reading the batched topic from the start: OrderedConsumer vs KafkaConsumer;
* KIP-253 §9's cost: synchronous sends of the ordered producer to a compacted topic that held every
  key and then grew 2 -> 4 (keys on the new partitions pay the compaction tombstones) against a
  plain topic alike, with how many tombstones and ListOffsets requests the compacted run sent.

Usage: python benchmarks/client_throughput.py [--records N] [--sync-records N] [--seed S]
"""
from __future__ import annotations

import argparse
import logging
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer

from chaoskit.client.admin import AdminClient
from chaoskit.client.consumer import OrderedConsumer
from chaoskit.client.producer import OrderedProducer
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import ClusterSpec

RECORD_BYTES = 200
PARTITIONS = 4


def timed(action: Callable[[], int]) -> float:
    """records/s of an action that returns how many records it handled."""
    start = time.monotonic()
    count = action()
    return count / (time.monotonic() - start)


def report(what: str, ordered: float, stock: float) -> None:
    print(f"{what:<34} ordered {ordered:>9,.0f} rec/s   kafka-python {stock:>9,.0f} rec/s   "
          f"ratio {ordered / stock:.2f}")


@contextmanager
def count_calls(name: str) -> Iterator[Callable[[], int]]:
    """Counts the calls §9's tombstones make to `name` (the module-level request helper) inside the
    block; the helper is put back after it."""
    import chaoskit.client.tombstones as module
    real, calls = getattr(module, name), [0]

    def counted(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        return real(*args, **kwargs)
    setattr(module, name, counted)
    try:
        yield lambda: calls[0]
    finally:
        setattr(module, name, real)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000, help="batched sends and consumer reads per client")
    parser.add_argument("--sync-records", type=int, default=2_000, help="synchronous sends per client")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    rng = random.Random(args.seed)
    payload = rng.randbytes(RECORD_BYTES)
    keys = [b"key-%d" % rng.randrange(1000) for _ in range(max(args.records, args.sync_records))]

    with tempfile.TemporaryDirectory(prefix="chaoskit-bench-") as tmp:
        spec = ClusterSpec(brokers=3, controllers=1, run_dir=Path(tmp) / "run", profile="patched")
        with LocalCluster(spec) as cluster:
            boot = cluster.bootstrap_servers
            with AdminClient(boot) as admin:
                for name in ("sync-o", "sync-k", "batch-o", "batch-k"):
                    admin.create_topic(name, PARTITIONS, 3)
                    cluster.wait_until_replicated(name)

            n = args.sync_records
            with OrderedProducer(boot) as producer:
                ordered = timed(lambda: len([producer.send("sync-o", keys[i], payload) for i in range(n)]))
            stock_producer = KafkaProducer(bootstrap_servers=boot, acks="all", enable_idempotence=True, linger_ms=0)
            stock = timed(lambda: len([stock_producer.send("sync-k", key=keys[i], value=payload).get(30)
                                       for i in range(n)]))
            report(f"produce, synchronous ({n:,})", ordered, stock)

            n = args.records
            with OrderedProducer(boot) as producer:
                ordered = timed(lambda: len(producer.send_many("batch-o", [(keys[i], payload) for i in range(n)])))
            stock_producer = KafkaProducer(bootstrap_servers=boot, acks="all", enable_idempotence=True, linger_ms=5,
                                           batch_size=256 * 1024)

            def stock_batched() -> int:
                for i in range(n):
                    stock_producer.send("batch-k", key=keys[i], value=payload)
                stock_producer.flush()
                return n
            stock = timed(stock_batched)
            stock_producer.close()
            report(f"produce, batched ({n:,})", ordered, stock)

            def read_ordered() -> int:
                with OrderedConsumer(boot, group_id="bench-o", enable_auto_commit=False) as consumer:
                    consumer.subscribe(["batch-o"])
                    seen = 0
                    while seen < n:
                        seen += len(consumer.poll(1000))
                    return seen

            def read_stock() -> int:
                consumer = KafkaConsumer("batch-k", bootstrap_servers=boot, group_id="bench-k",
                                         auto_offset_reset="earliest", enable_auto_commit=False)
                seen = 0
                while seen < n:
                    seen += sum(len(v) for v in consumer.poll(timeout_ms=1000).values())
                consumer.close()
                return seen
            report(f"consume, one-member group ({n:,})", timed(read_ordered), timed(read_stock))

            n = args.sync_records
            with AdminClient(boot) as admin, OrderedProducer(boot) as producer:
                for name, config in (("grown-c", {"cleanup.policy": "compact"}), ("grown-p", {})):
                    admin.create_topic(name, 2, 3, config)
                    cluster.wait_until_replicated(name)
                    producer.send_many(name, [(k, payload) for k in sorted(set(keys))])  # old values to remove
                    admin.expand(name, 4)
                    cluster.wait_until_replicated(name)
            rates = {}
            with count_calls("list_offset") as asked:
                for name in ("grown-c", "grown-p"):
                    with OrderedProducer(boot) as producer:
                        rates[name] = timed(lambda: len([producer.send(name, keys[i], payload) for i in range(n)]))
                        if name == "grown-c":
                            tombstones, list_offsets = len(producer.tombstones_sent), asked()
            print(f"{'KIP-253 §9, synchronous (' + f'{n:,}' + ')':<34} compacted {rates['grown-c']:>9,.0f}/s   "
                  f"plain {rates['grown-p']:>9,.0f}/s   ratio {rates['grown-c'] / rates['grown-p']:.2f}   "
                  f"tombstones {tombstones:,}, ListOffsets {list_offsets:,}")


if __name__ == "__main__":
    main()
