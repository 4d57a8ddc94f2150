"""The schedule executor (chaoskit.nemesis.executor) with a recording fake nemesis and an injected clock."""
from __future__ import annotations

import threading
import time

import pytest

from chaoskit.history.schema import Op
from chaoskit.nemesis.executor import HealError, MonotonicClock, run_schedule
from chaoskit.nemesis.ops import with_resolved
from chaoskit.nemesis.schedule import Window, generate
from chaoskit.roles import NoopNemesis


class FakeClock:
    """Jumps straight to each awaited moment; can raise or stop the run at a given time."""

    def __init__(self, fail_at: float | None = None, stop_at: float | None = None):
        self.t = 0.0
        self.fail_at, self.stop_at = fail_at, stop_at

    def now(self) -> float:
        return self.t

    def wait_until(self, t: float, stop: threading.Event) -> bool:
        if self.fail_at is not None and t >= self.fail_at:
            self.t = self.fail_at
            raise RuntimeError("the run crashed")
        if self.stop_at is not None and t >= self.stop_at:
            self.t = self.stop_at
            stop.set()
        if stop.is_set():
            return False
        self.t = max(self.t, t)
        return True


class RecordingNemesis:
    """Logs (clock time, f, window) per invoke; raises where told to."""

    def __init__(self, clock: FakeClock, raise_on: set[tuple[str, int]] = frozenset(), interrupt_on=None):
        self.clock, self.raise_on, self.interrupt_on = clock, raise_on, interrupt_on
        self.calls: list[tuple[float, str, int]] = []
        self.tests: list[object] = []

    def setup(self, test) -> None:
        pass

    def invoke(self, test, op: Op) -> Op:
        self.tests.append(test)
        key = (op["f"], op["value"]["window"])
        self.calls.append((self.clock.now(), *key))
        if key == self.interrupt_on:
            raise KeyboardInterrupt
        if key in self.raise_on:
            raise ConnectionError("proxy unreachable")
        return with_resolved(op, {"broker": 1})

    def teardown(self, test) -> None:
        pass


def window(i: int, start: float, stop: float, name: str = "partition") -> Window:
    return Window(i, start, stop, name, "leader-of:orders/0", {}, 7)


WINDOWS = [window(0, 1.0, 4.0), window(1, 2.0, 3.0, "kill"), window(2, 4.0, 6.0), window(3, 5.0, 9.0, "kill")]


def run(windows=WINDOWS, **kwargs):
    clock = FakeClock(**{k: kwargs.pop(k) for k in ("fail_at", "stop_at") if k in kwargs})
    nemesis = RecordingNemesis(clock, **kwargs)
    ops: list[Op] = []
    return clock, nemesis, ops, lambda: run_schedule(nemesis, windows, ops.append, clock=clock)


def test_starts_and_stops_each_window_on_time_and_records_ops():
    clock, nemesis, ops, go = run()
    go()
    assert nemesis.calls == [
        (1.0, "start", 0), (2.0, "start", 1), (3.0, "stop", 1),
        (4.0, "stop", 0), (4.0, "start", 2),  # a stop goes before a start at the same instant
        (5.0, "start", 3), (6.0, "stop", 2), (9.0, "stop", 3),
    ]
    assert all(0 <= o["value"].pop("took_s") < 1 for o in ops)  # how long before its record each op began
    assert ops[0] == {"process": "nemesis", "type": "info", "f": "start", "value": {
        "fault": "partition", "target": "leader-of:orders/0", "params": {}, "window": 0, "pick": 7,
        "resolved": {"broker": 1}}}
    assert [(o["f"], o["value"]["window"]) for o in ops] == [c[1:] for c in nemesis.calls]


def test_an_exception_ending_the_run_heals_every_active_fault():
    clock, nemesis, ops, go = run(fail_at=5.5)
    with pytest.raises(RuntimeError, match="the run crashed"):
        go()
    # at 5.5 windows 2 and 3 are active: both are stopped, newest first
    assert nemesis.calls[-2:] == [(5.5, "stop", 3), (5.5, "stop", 2)]
    started = [c[2] for c in nemesis.calls if c[1] == "start"]
    stopped = [c[2] for c in nemesis.calls if c[1] == "stop"]
    assert sorted(started) == sorted(stopped)


def test_keyboard_interrupt_inside_the_nemesis_still_heals():
    clock, nemesis, ops, go = run(interrupt_on=("start", 1))
    with pytest.raises(KeyboardInterrupt):
        go()
    assert nemesis.calls == [(1.0, "start", 0), (2.0, "start", 1), (2.0, "stop", 1), (2.0, "stop", 0)]


def test_stopping_early_heals_and_returns():
    clock, nemesis, ops, go = run(stop_at=2.5)
    go()
    assert nemesis.calls == [(1.0, "start", 0), (2.0, "start", 1), (2.5, "stop", 1), (2.5, "stop", 0)]


def test_a_failing_start_is_recorded_as_indeterminate_and_still_stopped():
    clock, nemesis, ops, go = run(raise_on={("start", 0)})
    go()
    failed = [o for o in ops if "error" in o]
    assert failed == [{"process": "nemesis", "type": "info", "f": "start", "error": "ConnectionError: proxy unreachable",
                       "value": {"fault": "partition", "target": "leader-of:orders/0", "params": {}, "window": 0,
                                 "pick": 7}}]
    assert (4.0, "stop", 0) in nemesis.calls and len(ops) == 8  # the run went on


def test_a_failed_heal_is_reported_by_name():
    clock, nemesis, ops, go = run(stop_at=2.5, raise_on={("stop", 1)})
    with pytest.raises(HealError, match=r"window 1 kill on leader-of:orders/0"):
        go()
    assert (2.5, "stop", 0) in nemesis.calls  # the other fault was still healed


def test_a_failed_heal_is_added_to_the_exception_that_ended_the_run():
    clock, nemesis, ops, go = run(fail_at=2.5, raise_on={("stop", 1)})
    with pytest.raises(RuntimeError, match="the run crashed") as info:
        go()
    assert any("could not heal" in note and "window 1" in note for note in info.value.__notes__)


def test_a_recorder_failure_does_not_stop_the_heal():
    clock = FakeClock(fail_at=2.5)
    nemesis = RecordingNemesis(clock)

    def record(op: Op) -> None:
        if op["f"] == "stop":
            raise OSError("disk full")

    with pytest.raises(RuntimeError, match="the run crashed") as info:
        run_schedule(nemesis, WINDOWS, record, clock=clock)
    assert nemesis.calls[-2:] == [(2.5, "stop", 1), (2.5, "stop", 0)]
    assert "disk full" in info.value.__notes__[0]


def test_every_invoke_gets_the_run_as_test_the_heals_too():
    run_, clock, ops = object(), FakeClock(stop_at=4.5), []
    nemesis = RecordingNemesis(clock)
    run_schedule(nemesis, WINDOWS, ops.append, clock=clock, test=run_)
    assert len(nemesis.tests) == 2 * 3 and all(t is run_ for t in nemesis.tests)  # 3 started by 4.5, each stopped


def test_a_window_that_does_not_end_after_it_starts_is_refused():
    with pytest.raises(ValueError, match="window 0 .* must start before it stops"):
        run_schedule(NoopNemesis(), [window(0, 3.0, 3.0)], lambda op: None, clock=FakeClock())


def test_a_generated_schedule_plays_as_start_stop_pairs():
    schedule = generate({"duration_s": 60, "mean_interval_s": 2, "window_s": [1, 3], "faults": {
        "a": {"weight": 1, "targets": ["client"]}, "b": {"weight": 2, "targets": ["random-broker"]}}}, 3)
    ops: list[Op] = []
    run_schedule(NoopNemesis(), schedule.windows, ops.append, clock=FakeClock())
    assert len(ops) == 2 * len(schedule.windows) > 0
    assert pairs_by_window(ops) == {w.id: ["start", "stop"] for w in schedule.windows}


def pairs_by_window(ops: list[Op]) -> dict[int, list[str]]:
    pairs: dict[int, list[str]] = {}
    for op in ops:
        pairs.setdefault(op["value"]["window"], []).append(op["f"])
    return pairs


def test_monotonic_clock_waits_for_the_moment_or_the_stop():
    clock, stop = MonotonicClock(), threading.Event()
    assert clock.wait_until(0.02, stop) and clock.now() >= 0.02
    threading.Timer(0.05, stop.set).start()
    began = time.monotonic()
    assert clock.wait_until(60, stop) is False
    assert time.monotonic() - began < 5  # woke on the stop, not after 60 s


class WaitingNemesis:
    """A `slow` fault whose start waits until the `partition` window has stopped (or gives up after 10 s)."""

    def __init__(self) -> None:
        self.partition_stopped = threading.Event()
        self.calls: list[tuple[str, str]] = []

    def setup(self, test) -> None:
        pass

    def invoke(self, test, op: Op) -> Op:
        key = (op["f"], op["value"]["fault"])
        self.calls.append(key)
        if key == ("start", "slow"):
            waited = self.partition_stopped.wait(10)
            self.calls.append(("started", "slow" if waited else "slow, gave up"))
        if key == ("stop", "partition"):
            self.partition_stopped.set()
        return op

    def teardown(self, test) -> None:
        pass


def test_a_step_that_waits_holds_back_only_its_own_fault():
    # an admin step retrying for seconds must not stretch an isolation due to end meanwhile
    nemesis = WaitingNemesis()
    windows = [window(0, 0.01, 0.3, "slow"), window(1, 0.02, 0.05, "partition"), window(2, 0.04, 0.06, "slow")]
    ops: list[Op] = []
    run_schedule(nemesis, windows, ops.append)
    assert ("started", "slow") in nemesis.calls  # the waiting step saw the isolation end while it waited
    # the slow fault's own ops keep their order, after the step that waited
    assert [c for c in nemesis.calls if c[1] == "slow"] == [("start", "slow"), ("started", "slow"), ("start", "slow"),
                                                            ("started", "slow"), ("stop", "slow"), ("stop", "slow")]
    assert pairs_by_window(ops) == {0: ["start", "stop"], 1: ["start", "stop"], 2: ["start", "stop"]}


def test_stopping_while_a_step_waits_drops_what_is_queued_and_heals_what_started():
    nemesis, stop = WaitingNemesis(), threading.Event()
    windows = [window(0, 0.01, 0.3, "slow"), window(1, 0.02, 0.4, "slow"), window(2, 0.03, 0.5, "partition")]
    threading.Timer(0.1, stop.set).start()
    ops: list[Op] = []
    run_schedule(nemesis, windows, ops.append, stop=stop)
    # window 1 never started (queued behind the waiting step): nothing of it is played or healed
    assert pairs_by_window(ops) == {0: ["start", "stop"], 2: ["start", "stop"]}
    assert ("started", "slow") in nemesis.calls  # the heal of the partition released the waiting step
