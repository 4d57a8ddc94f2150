"""The clients fault (chaoskit_plugins.faults.clients) on stand-in clients: which clients each action
holds, closes or stops, that `one` follows the window's pick, and that the window's end lets go."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from chaoskit.nemesis.ops import fault_op
from chaoskit_plugins.clients.ops import ClientBase
from chaoskit_plugins.faults.clients import ClientsFault


class Client(ClientBase):
    def close_consumer(self) -> None:
        self.closed = getattr(self, "closed", 0) + 1


def clients():
    out = []
    for process, role in enumerate(["send", "send", "poll", "poll"]):
        c = Client()
        c.process = process
        c.produces, c.consumes = role == "send", role == "poll"
        c._consumer = object() if role == "poll" else None
        out.append(c)
    return out


def play(action, which="all", pick=0):
    run = SimpleNamespace(clients=clients(), record=lambda op: None)
    fault = ClientsFault()
    fault.setup(run)
    window = SimpleNamespace(id=0, name="clients", target="client", params={"action": action, "which": which}, pick=pick,
                             start_s=0, stop_s=1)
    started = fault.invoke(run, fault_op("start", window))
    return run.clients, fault, run, window, started["value"]["resolved"]


def test_idle_holds_the_consumers_until_the_window_ends():
    cs, fault, run, window, resolved = play("idle")
    assert resolved == {"action": "idle", "processes": [2, 3]}
    assert [c._released.is_set() for c in cs] == [True, True, False, False]
    fault.invoke(run, fault_op("stop", window))
    assert all(c._released.is_set() for c in cs)


def test_leave_closes_the_consumers_and_restart_closes_them_without_holding():
    cs, *_ = play("leave")
    assert [getattr(c, "closed", 0) for c in cs] == [0, 0, 1, 1] and not cs[2]._released.is_set()
    cs, *_ = play("restart")
    assert [getattr(c, "closed", 0) for c in cs] == [0, 0, 1, 1] and cs[2]._released.is_set()


def test_stop_producers_holds_sends_only_and_one_follows_the_pick():
    cs, fault, run, window, resolved = play("stop-producers", "one", pick=3)
    assert resolved["processes"] == [1] and not cs[1]._sending.is_set() and cs[0]._sending.is_set()
    fault.invoke(run, fault_op("stop", window))
    assert cs[1]._sending.is_set()


def test_a_bad_action_says_which_there_are():
    with pytest.raises(ValueError, match="idle, leave, restart, stop-producers"):
        play("dance")
