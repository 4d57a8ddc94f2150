"""The nemesis op shape (chaoskit.nemesis.ops) and target specs (chaoskit.nemesis.targets)."""
from __future__ import annotations

import pytest

from chaoskit.nemesis.ops import fault_op, with_error
from chaoskit.nemesis.schedule import Window
from chaoskit.nemesis.targets import Target, TargetSpecError, parse_target

WINDOW = Window(3, 1.0, 2.0, "kill", "broker:2", {"signal": "KILL"}, 99)


def test_fault_op_has_the_history_shape():
    assert fault_op("start", WINDOW) == {"process": "nemesis", "type": "info", "f": "start", "value": {
        "fault": "kill", "target": "broker:2", "params": {"signal": "KILL"}, "window": 3, "pick": 99}}
    with pytest.raises(ValueError, match="'start' or 'stop'"):
        fault_op("heal", WINDOW)
    assert with_error(fault_op("stop", WINDOW), TimeoutError("no answer"))["error"] == "TimeoutError: no answer"


@pytest.mark.parametrize("text,parsed", [
    ("leader-of:orders/0", Target("leader-of", topic="orders", partition=0)),
    ("follower-of:my.topic-1/12", Target("follower-of", topic="my.topic-1", partition=12)),
    ("active-controller", Target("active-controller")),
    ("random-broker", Target("random-broker")),
    ("broker:3", Target("broker", broker=3)),
    ("client", Target("client")),
])
def test_target_specs_parse_and_print_back(text, parsed):
    assert parse_target(text) == parsed and str(parsed) == text


@pytest.mark.parametrize("text,message", [
    ("leader:orders/0", "unknown target kind 'leader'.*expected one of leader-of:<topic>/<partition>"),
    ("leader-of:orders", "needs <topic>/<partition>"),
    ("leader-of:bad topic/0", "needs <topic>/<partition>"),
    ("broker:one", "numeric id"),
    ("client:1", "takes no argument"),
    (5, "a target spec is a string"),
])
def test_bad_target_specs_say_what_is_wrong(text, message):
    with pytest.raises(TargetSpecError, match=message):
        parse_target(text)
