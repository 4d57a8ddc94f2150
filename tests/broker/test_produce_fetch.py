"""Produce and Fetch against one real broker over the wire: idempotent de-duplication, sequence
gaps, corrupt batches, min.insync.replicas, long polls, ListOffsets and DeleteRecords."""
from __future__ import annotations

import json
import threading
import time

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.records import build_batch, decode_records, split_batches


def decode_records_all(records: bytes | None) -> list:
    return [r for batch in split_batches(records or b"") for r in decode_records(batch)]


def test_idempotent_retry_returns_the_original_offset(start_brokers, wire):
    controller, brokers = start_brokers(1)
    controller.create_topic("idem", {0: [1]})
    with brokers[1].client() as c:
        first = build_batch([(b"k", b"a"), (b"k", b"b")], producer_id=7, producer_epoch=0, base_sequence=0)
        second = build_batch([(b"k", b"c")], producer_id=7, producer_epoch=0, base_sequence=2)
        assert wire.produce(c, "idem", 0, first).base_offset == 0
        assert wire.produce(c, "idem", 0, second).base_offset == 2
        retry = wire.produce(c, "idem", 0, first)  # a retry after a lost answer
        assert (retry.error_code, retry.base_offset) == (ErrorCode.NONE, 0)
        gap = wire.produce(c, "idem", 0, build_batch([(b"k", b"x")], producer_id=7, producer_epoch=0,
                                                     base_sequence=9))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        in_order = build_batch([(b"k", b"y")], producer_id=7, producer_epoch=0, base_sequence=3)
        assert wire.produce(c, "idem", 0, in_order).base_offset == 3
        bumped = build_batch([(b"k", b"z")], producer_id=7, producer_epoch=1, base_sequence=0)
        assert wire.produce(c, "idem", 0, bumped).base_offset == 4
        fenced = build_batch([(b"k", b"old")], producer_id=7, producer_epoch=0, base_sequence=4)
        assert wire.produce(c, "idem", 0, fenced).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        got = wire.fetch(c, "idem", 0, 0)
        assert [r.value for r in decode_records_all(got.records)] == [b"a", b"b", b"c", b"y", b"z"]
        assert got.high_watermark == 5


def test_corrupt_batch_and_bad_acks_are_refused(start_brokers, wire):
    controller, brokers = start_brokers(1)
    controller.create_topic("crc", {0: [1]})
    batch = bytearray(build_batch([(None, b"payload")]))
    batch[-3] ^= 0xFF  # inside the records: the CRC no longer matches
    with brokers[1].client() as c:
        assert wire.produce(c, "crc", 0, bytes(batch)).error_code == ErrorCode.CORRUPT_MESSAGE
        assert wire.produce(c, "crc", 0, build_batch([(None, b"ok")]), acks=2).error_code == \
            ErrorCode.INVALID_REQUIRED_ACKS
        assert wire.produce(c, "nope", 0, build_batch([(None, b"ok")])).error_code == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert wire.list_offset(c, "crc", 0, -1).offset == 0  # nothing was written


def test_min_insync_replicas_refuses_acks_all(start_brokers, wire):
    controller, brokers = start_brokers(1)
    controller.zk.create("/config/topics/strict", json.dumps({"version": 1, "config": {
        "min.insync.replicas": "2"}}).encode(), makepath=True)
    controller.create_topic("strict", {0: [1]})
    with brokers[1].client() as c:
        assert wire.produce(c, "strict", 0, build_batch([(None, b"x")]), acks=-1).error_code == \
            ErrorCode.NOT_ENOUGH_REPLICAS
        assert wire.produce(c, "strict", 0, build_batch([(None, b"x")]), acks=1).error_code == ErrorCode.NONE


def test_fetch_long_polls_until_data_arrives(start_brokers, wire):
    controller, brokers = start_brokers(1)
    controller.create_topic("poll", {0: [1]})

    def produce_later():
        time.sleep(0.3)  # the fetch below must already be waiting
        with brokers[1].client() as p:
            wire.produce(p, "poll", 0, build_batch([(None, b"late")]))

    writer = threading.Thread(target=produce_later)
    with brokers[1].client() as c:
        start = time.monotonic()
        writer.start()
        got = wire.fetch(c, "poll", 0, 0, max_wait_ms=5000)
        took = time.monotonic() - start
        writer.join()
        assert [r.value for r in decode_records_all(got.records)] == [b"late"]
        assert 0.2 < took < 4.0, took
        start = time.monotonic()
        empty = wire.fetch(c, "poll", 0, 1, max_wait_ms=400)
        assert not empty.records and time.monotonic() - start >= 0.35


def test_list_offsets_and_delete_records(start_brokers, wire):
    from kafka.protocol.admin import DeleteRecordsRequest
    controller, brokers = start_brokers(1)
    controller.create_topic("offs", {0: [1]})
    with brokers[1].client() as c:
        for i in range(5):
            wire.produce(c, "offs", 0, build_batch([(None, b"%d" % i)], timestamp_ms=1000 * (i + 1)))
        assert wire.list_offset(c, "offs", 0, -2).offset == 0
        latest = wire.list_offset(c, "offs", 0, -1)
        assert (latest.offset, latest.leader_epoch) == (5, 0)
        assert wire.list_offset(c, "offs", 0, 2500).offset == 2
        assert wire.list_offset(c, "offs", 0, 99_000).offset == -1
        assert wire.list_offset(c, "offs", 0, -3, version=7).offset == 4
        t = DeleteRecordsRequest.DeleteRecordsTopic
        answer = c.request(DeleteRecordsRequest(timeout_ms=1000, topics=[t(name="offs", partitions=[
            t.DeleteRecordsPartition(partition_index=0, offset=3)])]), 1)
        assert answer.topics[0].partitions[0].low_watermark == 3
        assert wire.list_offset(c, "offs", 0, -2).offset == 3
        assert wire.fetch(c, "offs", 0, 1).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_acks_zero_gets_no_answer_but_is_written(start_brokers, wire):
    controller, brokers = start_brokers(1)
    controller.create_topic("fire", {0: [1]})
    with brokers[1].client() as c:
        assert wire.produce(c, "fire", 0, build_batch([(None, b"and forget")]), acks=0) is None
        # requests on one connection are answered in order, so the write happened before this
        assert wire.list_offset(c, "fire", 0, -1).offset == 1


def test_producer_ids_are_unique_across_brokers(start_brokers):
    from kafka.protocol.producer import InitProducerIdRequest
    controller, brokers = start_brokers(2)
    ids = []
    for b in (1, 2, 1, 2):
        with brokers[b].client() as c:
            answer = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 2)
            assert (answer.error_code, answer.producer_epoch) == (ErrorCode.NONE, 0)
            ids.append(answer.producer_id)
    assert len(set(ids)) == 4
    assert ids[2] == ids[0] + 1 and ids[3] == ids[1] + 1  # each broker hands out its own block
    raw, _ = controller.zk.get("/latest_producer_id_block")
    assert json.loads(raw)["block_end"] == "1999"
