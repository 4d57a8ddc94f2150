"""The broker's request log (chaoskit.broker.request_log): a client's requests with their
partitions and the errors they got; replicas' fetches and internal requests left out."""
from __future__ import annotations

from types import SimpleNamespace

from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.producer import ProduceRequest

from chaoskit.broker.request_log import RequestLog


def fetch(replica_id: int) -> FetchRequest:
    part = FetchRequest.FetchTopic.FetchPartition(partition=2, current_leader_epoch=4, fetch_offset=137,
                                                  log_start_offset=-1, partition_max_bytes=1)
    return FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1, isolation_level=0,
                        session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                        topics=[FetchRequest.FetchTopic(topic="orders", partitions=[part])])


def answer(error: int) -> FetchResponse:
    R = FetchResponse.FetchableTopicResponse
    part = R.PartitionData(partition_index=2, error_code=error, high_watermark=0, last_stable_offset=0,
                           log_start_offset=0, aborted_transactions=[], preferred_read_replica=-1, records=b"")
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[R(topic="orders", partitions=[part])])


def test_a_clients_requests_and_their_errors_are_logged_a_replicas_are_not(tmp_path):
    log = RequestLog(tmp_path / "broker-1" / "requests.log")
    header = SimpleNamespace(request_api_key=1, request_api_version=12, client_id="chaoskit-3")
    log.write(header, fetch(-1), answer(74))
    log.write(header, fetch(2), answer(0))  # broker 2 following: the cluster's own traffic
    log.write(SimpleNamespace(request_api_key=32000, request_api_version=0, client_id="controller"), fetch(-1),
              answer(0))
    produce = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1, topic_data=[
        ProduceRequest.TopicProduceData(name="orders", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=1, records=b"")])])
    log.write(SimpleNamespace(request_api_key=0, request_api_version=8, client_id="chaoskit-0"), produce, answer(0))
    log.close()
    lines = (tmp_path / "broker-1" / "requests.log").read_text().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("chaoskit-3 Fetch v12 orders-2@137 cle=4 lfe=-1 -> orders-2 FENCED_LEADER_EPOCH")
    assert lines[1].endswith("chaoskit-0 Produce v8 orders-1 -> ok")
