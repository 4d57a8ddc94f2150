"""The KIP tagged fields on standard APIs: they round-trip at flexible versions, vanish at their
defaults (an unpatched broker's bytes are unchanged), stock decoders skip them, and kafka-python's
own clients keep their Metadata decoder."""
from __future__ import annotations

import pytest
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.consumer import FetchRequest as StockFetch
from kafka.protocol.metadata import MetadataResponse as StockMetadata
from kafka.protocol.producer import ProduceRequest as StockProduce

from chaoskit.protocol import extensions as ext
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.registry import REQUESTS, response_class


def metadata(version: int, cls: type = ext.MetadataResponse, modes: tuple[int, ...] = (0, 1, -1),
             **topic_tags: int) -> ext.MetadataResponse:
    t = cls.MetadataResponseTopic
    def extra(m: int) -> dict[str, int]:
        return {"mode": m} if cls is ext.MetadataResponse else {}
    parts = [t.MetadataResponsePartition(error_code=0, partition_index=i, leader_id=1, leader_epoch=2,
                                         replica_nodes=[1], isr_nodes=[1], offline_replicas=[], **extra(m))
             for i, m in enumerate(modes)]
    return cls(version=version, throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=1,
               topics=[t(name="t", error_code=0, is_internal=False, partitions=parts, **topic_tags)])


@pytest.mark.parametrize("version", [9, 12])
def test_metadata_tags_round_trip_and_stock_clients_skip_them(version: int):
    data = bytes(metadata(version, initial_partition_count=4, undeleted_partition_count=8).encode(version=version))
    ours = ext.MetadataResponse.decode(data, version=version)
    assert (ours.topics[0].initial_partition_count, ours.topics[0].undeleted_partition_count) == (4, 8)
    assert [p.mode for p in ours.topics[0].partitions] == [0, 1, -1]
    stock = StockMetadata.decode(data, version=version)
    assert [p.partition_index for p in stock.topics[0].partitions] == [0, 1, 2] and stock.topics[0].name == "t"


@pytest.mark.parametrize("version", [1, 8, 9, 12])
def test_defaults_write_nothing(version: int):
    ours = metadata(version, modes=(0, 0, 0))  # what an unpatched broker sends: no counts, ReadWrite
    stock = metadata(version, cls=StockMetadata, modes=(0, 0, 0))
    assert bytes(ours.encode(version=version)) == bytes(stock.encode(version=version))


def test_tags_only_exist_at_flexible_versions():
    data = bytes(metadata(8, initial_partition_count=4, undeleted_partition_count=8).encode(version=8))
    back = ext.MetadataResponse.decode(data, version=8)
    assert back.topics[0].undeleted_partition_count == ext.UNKNOWN_COUNT  # v8 cannot carry it


def test_produce_and_fetch_counts():
    D = ext.ProduceRequest.TopicProduceData
    produce = ext.ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1, topic_data=[
        D(name="t", undeleted_partition_count=6, partition_data=[])])
    assert ext.ProduceRequest.decode(bytes(produce.encode(version=9)), version=9).topic_data[0].undeleted_partition_count == 6
    stock = StockProduce(transactional_id=None, acks=-1, timeout_ms=1, topic_data=[
        StockProduce.TopicProduceData(name="t", partition_data=[])])
    for v in (8, 9):  # a stock producer's request: no tag, the unknown count, not mode aware
        back = ext.ProduceRequest.decode(bytes(stock.encode(version=v)), version=v)
        assert (back.topic_data[0].undeleted_partition_count, back.mode_aware) == (-1, False)
    aware = ext.ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1, mode_aware=True, topic_data=[])
    assert ext.ProduceRequest.decode(bytes(aware.encode(version=9)), version=9).mode_aware is True
    assert StockProduce.decode(bytes(aware.encode(version=9)), version=9).acks == -1  # stock brokers skip it
    F = ext.FetchRequest.FetchTopic
    fetch = ext.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1, isolation_level=0, session_id=0,
                             session_epoch=-1, rack_id="", forgotten_topics_data=[],
                             topics=[F(topic="t", undeleted_partition_count=8, partitions=[])])
    assert ext.FetchRequest.decode(bytes(fetch.encode(version=12)), version=12).topics[0].undeleted_partition_count == 8
    assert StockFetch.decode(bytes(fetch.encode(version=12)), version=12).topics[0].topic == "t"
    unset = ext.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1, isolation_level=0, session_id=0,
                             session_epoch=-1, rack_id="", forgotten_topics_data=[], topics=[F(topic="t", partitions=[])])
    stock_fetch = StockFetch(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1, isolation_level=0, session_id=0,
                             session_epoch=-1, rack_id="", forgotten_topics_data=[],
                             topics=[StockFetch.FetchTopic(topic="t", partitions=[])])
    assert bytes(unset.encode(version=12)) == bytes(stock_fetch.encode(version=12))


def test_the_registry_uses_the_extended_classes_and_kafka_python_keeps_its_own():
    assert REQUESTS[0] is ext.ProduceRequest and REQUESTS[1] is ext.FetchRequest
    for v in range(13):
        assert issubclass(response_class(3, v), ext.MetadataResponse)
    header = RequestHeader(request_api_key=3, request_api_version=12, correlation_id=0)
    got = header.get_response_class()
    assert issubclass(got, StockMetadata) and not issubclass(got, ext.MetadataResponse)


def test_partition_modes():
    assert [PartitionMode.of(c).label for c in (0, 1, -1)] == ["ReadWrite", "ReadOnly", "None"]
    with pytest.raises(ValueError, match="partition mode 3 is not one of"):
        PartitionMode.of(3)
