"""KIP-320 on the leader: current_leader_epoch in Fetch, ListOffsets and OffsetForLeaderEpoch is
checked with leader.epoch.fencing.enable and ignored without it, at the versions chaoskit's own
helpers and the stock clients send; a deposed controller's requests are refused with
STALE_CONTROLLER_EPOCH, and requests meant for an earlier registration of the broker with
STALE_BROKER_EPOCH."""
from __future__ import annotations

from typing import Any

import pytest

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.records import build_batch

FENCED, UNKNOWN, NONE = ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NONE
# (Fetch, ListOffsets, OffsetForLeaderEpoch) versions: the wire helpers' defaults, and what each
# stock client sends to this broker (docs/protocol.md)
VERSIONS = {"helpers": (11, 5, 3), "kafka-python": (12, 7, 4), "librdkafka": (12, 7, 2)}


@pytest.mark.parametrize("fencing", [True, False], ids=["patched", "unpatched"])
def test_leader_checks_the_requests_leader_epoch(start_brokers, wire, fencing):
    controller, brokers = start_brokers(1, **{"leader.epoch.fencing.enable": fencing})
    controller.create_topic("fenced", {0: [1]})
    with brokers[1].client() as c:
        wire.produce(c, "fenced", 0, build_batch([(None, b"at epoch 0")]))
    assert controller.elect("fenced", 0, leader=1, replicas=[1], isr=[1]) == 1
    with brokers[1].client() as c:
        wire.produce(c, "fenced", 0, build_batch([(None, b"at epoch 1")]))
        codes = {(client, epoch): (wire.fetch(c, "fenced", 0, 0, current_leader_epoch=epoch, version=f).error_code,
                                   wire.list_offset(c, "fenced", 0, -1, current_leader_epoch=epoch,
                                                    version=lo).error_code,
                                   wire.epoch_end(c, "fenced", 0, 0, current_leader_epoch=epoch, version=ep).error)
                 for client, (f, lo, ep) in VERSIONS.items() for epoch in (-2, -1, 0, 1, 2)}
        # whatever the check, the answer for epoch 0 says where epoch 0 ended
        assert wire.epoch_end(c, "fenced", 0, 0).end_offset == 1
        # the epoch of the offset answered reaches clients with KIP-320 only
        assert wire.list_offset(c, "fenced", 0, -2).leader_epoch == (0 if fencing else -1)
    for client in VERSIONS:
        assert codes[client, -1] == (NONE,) * 3 and codes[client, 1] == (NONE,) * 3
        if fencing:
            assert codes[client, 0] == (FENCED,) * 3
            assert codes[client, 2] == (UNKNOWN,) * 3
            # as in Kafka: a Fetch reads any negative epoch as none, the others only -1
            assert codes[client, -2] == (NONE, FENCED, FENCED)
        else:
            assert codes[client, 0] == codes[client, 2] == codes[client, -2] == (NONE,) * 3


def test_a_fetch_waiting_for_records_is_fenced_by_a_new_epoch_not_answered_with_its_records(start_brokers, wire):
    """As Kafka's DelayedFetch: a consumer's long poll, checked at epoch 0 when it came, is answered
    FENCED_LEADER_EPOCH when the leader moves to epoch 1 while it waits, not with the records
    written in epoch 1 (a stale consumer must not read past a change it has not seen)."""
    import concurrent.futures

    controller, brokers = start_brokers(1)
    controller.create_topic("waiting", {0: [1]})
    with brokers[1].client() as c:
        wire.produce(c, "waiting", 0, build_batch([(None, b"at epoch 0")]))
    with concurrent.futures.ThreadPoolExecutor(1) as pool, brokers[1].client() as poller:
        polled = pool.submit(wire.fetch, poller, "waiting", 0, 1, current_leader_epoch=0, max_wait_ms=10_000)
        with brokers[1].client() as c:  # the poll is waiting at offset 1 (fetch_offset == high watermark)
            assert controller.elect("waiting", 0, leader=1, replicas=[1], isr=[1]) == 1
            wire.produce(c, "waiting", 0, build_batch([(None, b"at epoch 1")]))
        answer = polled.result(timeout=15)
    assert (answer.error_code, answer.records or b"") == (FENCED, b"")


def test_requests_from_a_deposed_controller_change_nothing(start_brokers, wire):
    controller, brokers = start_brokers(1)
    controller.epoch = 5
    controller.create_topic("ctl", {0: [1]})
    controller.states[("ctl", 0)].update(leader=-1, leader_epoch=9)
    stale = controller.leader_and_isr(1, [("ctl", 0)], epoch=4)
    assert stale.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert controller.update_metadata([1], epoch=4)[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    with brokers[1].client() as c:  # still the leader at epoch 0
        assert wire.produce(c, "ctl", 0, build_batch([(None, b"x")])).error_code == NONE
        assert wire.list_offset(c, "ctl", 0, -1, current_leader_epoch=0).error_code == NONE
    answer = controller.leader_and_isr(1, [("ctl", 0)], epoch=6)  # a newer controller is obeyed
    assert answer.error_code == NONE
    with brokers[1].client() as c:
        assert wire.produce(c, "ctl", 0, build_batch([(None, b"y")])).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_requests_for_an_earlier_registration_of_the_broker_change_nothing(start_brokers):
    """As Kafka's KIP-380: the controller names the broker epoch (the czxid of the broker's znode)
    each request is for. A broker killed and started again under its id before the controller
    noticed gets what was queued for the one before it, perhaps an UpdateMetadata of a single
    changed partition: applied to its fresh cache, clients would learn that the topic has only
    that partition. It refuses it; what names its own registration, or none (-1), it applies."""
    from chaoskit.client.admin import AdminClient

    controller, brokers = start_brokers(1)
    for topic in ("one", "two"):
        controller.create_topic(topic, {0: [1], 1: [1]})
    mine = controller.zk.get("/brokers/ids/1")[1].czxid

    def drop(topic: str, broker_epoch: int) -> int:
        """An UpdateMetadata deleting `topic` (the hand controller keeps it until one is applied)."""
        kept = dict(controller.states)
        controller.states = {k: v for k, v in kept.items() if k[0] != topic}
        code = controller.update_metadata([1], deleted=[topic], broker_epoch=broker_epoch)[0].error_code
        if code != NONE:
            controller.states = kept
        return code

    def topics() -> set[str]:
        with AdminClient(f"127.0.0.1:{brokers[1].port}") as admin:
            return {name for name, info in admin.metadata(["one", "two"]).items() if info.error == NONE}

    assert drop("one", mine - 1) == ErrorCode.STALE_BROKER_EPOCH and topics() == {"one", "two"}
    assert drop("one", mine) == NONE and topics() == {"two"}
    assert drop("two", -1) == NONE and topics() == set()


@pytest.mark.parametrize("fencing", [True, False], ids=["patched", "unpatched"])
def test_the_ordered_consumer_asks_at_its_metadata_epoch_and_retries_the_epoch_errors(start_brokers, fencing,
                                                                                         monkeypatch):
    """KIP-320 on the consumer's side of ListOffsets and Fetch: the leader epoch of its metadata
    goes with both, so a leader at another epoch refuses them; the consumer refreshes and asks
    again. The hand controller keeps the broker's metadata behind its leadership (FENCED) or
    ahead of it (UNKNOWN) until the consumer reports the refusal, then catches the lagging side up."""
    import chaoskit.client.consumer as consumer_module
    from chaoskit.client.consumer import OrderedConsumer
    from chaoskit.client.truncation import OffsetAndMetadata
    from chaoskit.protocol.wire_client import WireError
    from chaoskit.protocol.requests import produce

    monkeypatch.setattr(consumer_module, "LIST_OFFSETS_RETRY_S", 1.0)
    controller, brokers = start_brokers(1, **{"leader.epoch.fencing.enable": fencing})
    key = ("resets", 0)
    controller.create_topic("resets", {0: [1]})
    with brokers[1].client() as c:
        assert produce(c, "resets", 0, build_batch([(None, b"a"), (None, b"b")])).error_code == NONE
    bootstrap = f"127.0.0.1:{brokers[1].port}"
    refused: list[tuple[str, str]] = []

    def consumer(catch_up: Any) -> OrderedConsumer:
        made = OrderedConsumer(bootstrap, auto_offset_reset="earliest", metadata_max_age_s=0)

        def on_event(event: dict[str, Any]) -> None:
            if event["f"] == "epoch-refused":
                refused.append((event["value"]["request"], event["value"]["error"]))
                catch_up()
        made.events.subscribe(on_event)
        return made

    def behind() -> None:  # the leader moves on; the metadata it answers stays at the old epoch
        controller.elect(*key, leader=1, replicas=[1], isr=[1], send_to=[])
        controller.leader_and_isr(1, [key])

    def ahead() -> None:  # the metadata moves on; the leader has not heard
        controller.elect(*key, leader=1, replicas=[1], isr=[1], send_to=[])
        controller.update_metadata([1])

    # a reset asked of a leader newer than our metadata: fenced, then asked again and answered
    behind()
    with consumer(lambda: controller.update_metadata([1])) as c:
        c.assign([key])
        assert (c.position(key), refused) == ((0, [("ListOffsets", "FENCED_LEADER_EPOCH")]) if fencing else (0, []))
        # the answer's epoch (the offset's) goes with the reset position
        assert c.parts[key].last_epoch == (0 if fencing else None)
    refused.clear()

    # a reset asked of a leader behind our metadata: UNKNOWN_LEADER_EPOCH, retried until the
    # retry time is spent (the leader never catches up here) ...
    ahead()
    if fencing:
        with consumer(lambda: None) as c, pytest.raises(WireError, match="UNKNOWN_LEADER_EPOCH"):
            c.assign([key])
        assert refused == [("ListOffsets", "UNKNOWN_LEADER_EPOCH")]  # asked again and again, reported once
        refused.clear()
    # ... and answered once it has
    with consumer(lambda: controller.leader_and_isr(1, [key])) as c:
        c.assign([key])
        assert refused == ([("ListOffsets", "UNKNOWN_LEADER_EPOCH")] if fencing else [])
        refused.clear()
        # validating the reset position at an epoch the leader has not reached: the same
        ahead()
        assert values(c, 2) == [b"a", b"b"]
        assert refused == ([("OffsetsForLeaderEpoch", "UNKNOWN_LEADER_EPOCH")] if fencing else [])
        refused.clear()
        # a position without an epoch is not validated: the Fetch itself is refused, then served
        c.seek(key, 0)
        ahead()
        assert values(c, 2) == [b"a", b"b"]
        assert refused == ([("Fetch", "UNKNOWN_LEADER_EPOCH")] if fencing else [])
        # a position stored at an epoch our metadata has not reached: validated only once it has
        # (asked of a leader at an older epoch, the answer would say nothing about it)
        newer = controller.states[key]["leader_epoch"] + 1
        c.seek(key, OffsetAndMetadata(0, "", newer))
        assert values(c, 1, polls=5) == ([] if fencing else [b"a"])  # (without KIP-320 no epochs to wait for)
        if fencing:
            controller.elect(*key, leader=1, replicas=[1], isr=[1])
            assert values(c, 1) == [b"a"]


def values(consumer: Any, want: int, polls: int = 50) -> list[bytes]:
    got: list[bytes] = []
    for _ in range(polls):
        got.extend(r.value for r in consumer.poll(100))
        if len(got) >= want:
            break
    return got[:want]
