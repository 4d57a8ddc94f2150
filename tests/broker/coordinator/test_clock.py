"""The coordinator's clocks: ManualClock fires due timers in order as tests move time, and the
real LoopClock drives a session expiry on asyncio's timers."""
from __future__ import annotations

import asyncio
import time

from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest

from chaoskit.broker.coordinator import GroupCoordinator, LoopClock, ManualClock
from chaoskit.protocol.errors import ErrorCode


def test_manual_clock_fires_due_timers_in_order_including_ones_set_while_firing():
    clock = ManualClock(start_ms=0)
    fired: list[tuple[str, int]] = []
    clock.call_later(30, lambda: fired.append(("c", clock.now_ms())))
    clock.call_later(10, lambda: (fired.append(("a", clock.now_ms())),
                                  clock.call_later(5, lambda: fired.append(("a+5", clock.now_ms())))))
    clock.call_later(10, lambda: fired.append(("b", clock.now_ms())))
    clock.call_later(20, lambda: fired.append(("never", clock.now_ms()))).cancel()
    assert clock.advance(9) == 0 and fired == []
    assert clock.advance(21) == 4
    assert fired == [("a", 10), ("b", 10), ("a+5", 15), ("c", 30)]
    assert clock.now_ms() == 30 and clock.pending() == []


def test_on_the_real_loop_clock_a_silent_member_expires():
    class NoStore:
        async def append(self, partition, records):
            return 0

        def read_all(self, partition):
            return []

    async def main() -> None:
        coordinator = GroupCoordinator(1, NoStore(), partition_count=1, clock=LoopClock(), min_session_timeout_ms=1)
        await coordinator.on_become_leader(0)
        join = JoinGroupRequest(version=1, group_id="g", session_timeout_ms=50, rebalance_timeout_ms=50,
                                member_id="", protocol_type="consumer",
                                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])
        joined = await coordinator.join_group(join, 1)
        assert (joined.error_code, joined.generation_id) == (ErrorCode.NONE, 1)
        beat = HeartbeatRequest(version=1, group_id="g", generation_id=1, member_id=joined.member_id)
        assert (await coordinator.heartbeat(beat, 1)).error_code == ErrorCode.NONE
        deadline = time.monotonic() + 5
        while (await coordinator.heartbeat(beat, 1)).error_code == ErrorCode.NONE:
            assert time.monotonic() < deadline, "the 50 ms session never expired on the real clock"
            await asyncio.sleep(0.2)  # longer than the session, so the heartbeats do not keep it alive
        assert (await coordinator.heartbeat(beat, 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        await coordinator.close()
    asyncio.run(main())
