"""The private controller->broker APIs: shapes of docs/internals.md §3, flexible from v0."""
from chaoskit.protocol import internal
from chaoskit.protocol.internal import (LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest,
                                        UpdateMetadataRequest)
from chaoskit.protocol.registry import decode_request

LI = LeaderAndIsrRequest


def leader_and_isr() -> LeaderAndIsrRequest:
    state = LI.LeaderAndIsrTopicState.LeaderAndIsrPartitionState(
        partition_index=3, controller_epoch=2, leader=1, leader_epoch=7, isr=[1, 2], partition_epoch=4,
        replicas=[1, 2, 3], is_new=True)
    return LI(controller_id=100, controller_epoch=2,
              topics=[LI.LeaderAndIsrTopicState(topic_name="orders", partition_states=[state])],
              live_leaders=[LI.LeaderAndIsrLiveLeader(broker_id=1, host="127.0.0.1", port=9092)])


def framed(request, version=0) -> bytes:
    request.with_header(correlation_id=11, client_id="controller-100")
    return bytes(request.encode(version=version, header=True, framed=True))[4:]


def test_leader_and_isr_round_trip_through_the_registry():
    header, decoded = decode_request(framed(leader_and_isr()))
    assert header.request_api_key == internal.LEADER_AND_ISR == 32000
    assert header.version == 2  # flexible: request header v2
    [topic] = decoded.topics
    [p] = topic.partition_states
    assert (topic.topic_name, p.partition_index, p.leader, p.leader_epoch, p.isr, p.replicas, p.is_new) == \
        ("orders", 3, 1, 7, [1, 2], [1, 2, 3], True)
    assert decoded.live_leaders[0].port == 9092


def test_update_metadata_nullable_rack_and_deleted_topics():
    U = UpdateMetadataRequest
    req = U(controller_id=1, controller_epoch=5, topics=[], deleted_topics=["gone"],
            live_brokers=[U.UpdateMetadataBroker(broker_id=2, host="h", port=1, rack=None),
                          U.UpdateMetadataBroker(broker_id=3, host="h", port=2, rack="r1")])
    _, decoded = decode_request(framed(req))
    assert [b.rack for b in decoded.live_brokers] == [None, "r1"] and decoded.deleted_topics == ["gone"]


def test_stop_replica_delete_flag():
    S = StopReplicaRequest
    req = S(controller_id=1, controller_epoch=5, topics=[S.StopReplicaTopicState(
        topic_name="t", partitions=[S.StopReplicaTopicState.StopReplicaPartitionState(
            partition_index=0, leader_epoch=3, delete=True)])])
    _, decoded = decode_request(framed(req))
    assert decoded.topics[0].partitions[0].delete is True


def test_unknown_tagged_fields_are_skipped():
    # issue 5 adds KIP fields as tagged fields; an older reader must skip them, not fail
    raw = bytearray(framed(leader_and_isr()))
    assert raw[-1] == 0  # empty top-level tagged-field section
    raw[-1:] = bytes([1, 42, 2, 0xAB, 0xCD])  # one tag (42) of 2 bytes
    _, decoded = decode_request(bytes(raw))
    assert decoded.controller_epoch == 2


def test_response_shape():
    R = LeaderAndIsrResponse
    resp = R(error_code=0, topics=[R.LeaderAndIsrTopicError(topic_name="t", partition_errors=[
        R.LeaderAndIsrTopicError.LeaderAndIsrPartitionError(partition_index=0, error_code=11)])])
    assert R.decode(resp.encode(version=0), version=0).topics[0].partition_errors[0].error_code == 11


def test_kip_tags_of_the_controller_requests_round_trip():
    raw = leader_and_isr()
    raw.topics[0].undeleted_partition_count = 6
    raw.topics[0].partition_states[0].mode = 1
    _, decoded = decode_request(framed(raw))
    assert decoded.topics[0].undeleted_partition_count == 6 and decoded.topics[0].partition_states[0].mode == 1
    _, plain = decode_request(framed(leader_and_isr()))
    assert plain.topics[0].undeleted_partition_count == -1 and plain.topics[0].partition_states[0].mode == 0
    U = UpdateMetadataRequest
    req = U(controller_id=1, controller_epoch=5, allow_internal_partition_increase=True, deleted_topics=[],
            live_brokers=[], topics=[U.UpdateMetadataTopicState(
                topic_name="t", initial_partition_count=4, undeleted_partition_count=6, removed_partitions=[7],
                partition_states=[])])
    _, decoded = decode_request(framed(req))
    t = decoded.topics[0]
    assert decoded.allow_internal_partition_increase is True
    assert (t.initial_partition_count, t.undeleted_partition_count, t.removed_partitions) == (4, 6, [7])


def test_the_proposals_private_apis_round_trip():
    from chaoskit.protocol.internal import (ConsumerGroupPositionRequest, DeletePartitionsRequest,
                                            DeletePartitionsResponse, PartitionLeaderEpochsForPartitionsRequest,
                                            PartitionLeaderEpochsForPartitionsResponse)
    C = ConsumerGroupPositionRequest.ConsumerGroupPositionRequestTopic
    header, cgp = decode_request(framed(ConsumerGroupPositionRequest(
        group_id="g", generation_id=3, member_id="m", topics=[C(name="t", partitions=[
            C.ConsumerGroupPositionRequestPartition(partition_index=6, need_position=True, position=-1)])])))
    assert header.request_api_key == internal.CONSUMER_GROUP_POSITION == 32003
    assert cgp.topics[0].partitions[0].need_position is True
    E = PartitionLeaderEpochsForPartitionsRequest.PartitionLeaderEpochsForPartitionsRequestTopic
    header, _ = decode_request(framed(PartitionLeaderEpochsForPartitionsRequest(topics=[E(name="t", partitions=[4])])))
    assert header.request_api_key == internal.PARTITION_LEADER_EPOCHS == 32004
    D = DeletePartitionsRequest.DeletePartitionsTopic
    header, dp = decode_request(framed(DeletePartitionsRequest(timeout_ms=1, delete_partitions_delay=5000,
                                                               topics=[D(name="t", partitions=[2, 3])])))
    assert header.request_api_key == internal.DELETE_PARTITIONS == 32005
    assert (dp.immediate_delete, dp.delete_partitions_delay, dp.topics[0].partitions) == (False, 5000, [2, 3])
    _, dp = decode_request(framed(DeletePartitionsRequest(timeout_ms=1, immediate_delete=True, topics=[])))
    assert (dp.immediate_delete, dp.delete_partitions_delay) == (True, -1)  # the delay defaults to -1
    R = PartitionLeaderEpochsForPartitionsResponse
    P = R.PartitionLeaderEpochsForPartitionsResponseTopic.PartitionLeaderEpochsForPartitionsResponsePartition
    resp = R(throttle_time_ms=0, topics=[R.PartitionLeaderEpochsForPartitionsResponseTopic(name="t", partitions=[P(
        partition_index=4, error_code=0, leader_epoch_before_deletion=[],
        leader_epoch_after_creation=[P.PartitionLeaderEpoch(partition=0, leader_epoch=3)])])])
    back = R.decode(resp.encode(version=0), version=0).topics[0].partitions[0]
    assert [(e.partition, e.leader_epoch) for e in back.leader_epoch_after_creation] == [(0, 3)]
    DR = DeletePartitionsResponse
    T = DR.DeletePartitionsTopicResult
    ok = DR(throttle_time_ms=0, error_code=0, responses=[T(name="t", partitions=[
        T.DeletePartitionsPartitionResult(partition_index=2, status_code=1, error_code=0),
        T.DeletePartitionsPartitionResult(partition_index=9, status_code=-1, error_code=3, error_message="gone")])])
    back = DR.decode(ok.encode(version=0), version=0).responses[0].partitions
    assert [(p.partition_index, p.status_code, p.error_code, p.error_message) for p in back] == \
        [(2, 1, 0, None), (9, -1, 3, "gone")]
