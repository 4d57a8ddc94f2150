"""Error codes: Kafka's numbers, retriability as the Java client has it, and the private code."""
import kafka.errors

from chaoskit.protocol.errors import ErrorCode, KafkaError, error_name, retriable


def test_codes_match_kafka_pythons_table():
    # kafka-python's errors module carries Kafka's numbers; ours must agree on every shared code
    for code in ErrorCode:
        if code == ErrorCode.INVALID_PARTITION_METADATA:
            continue
        assert kafka.errors.for_code(int(code)).errno == int(code), code


def test_retriable_split():
    assert retriable(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert retriable(ErrorCode.FENCED_LEADER_EPOCH)
    assert retriable(ErrorCode.INVALID_PARTITION_METADATA)
    assert not retriable(ErrorCode.OFFSET_OUT_OF_RANGE)
    assert not retriable(ErrorCode.UNSUPPORTED_VERSION)
    assert not retriable(ErrorCode.NONE)


def test_private_code_is_outside_kafkas_range():
    assert ErrorCode.INVALID_PARTITION_METADATA == 10000
    assert 10000 not in kafka.errors.kafka_errors  # no Kafka release uses it


def test_kafka_error_carries_code_and_flag():
    e = KafkaError(6, "partition t-0 moved")
    assert e.code is ErrorCode.NOT_LEADER_OR_FOLLOWER and e.retriable
    assert "NOT_LEADER_OR_FOLLOWER (6): partition t-0 moved" == str(e)
    assert error_name(12345) == "UNKNOWN(12345)"
