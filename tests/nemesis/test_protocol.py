"""The nemesis role (chaoskit.nemesis.protocol) and target specs (chaoskit.nemesis.targets)."""
from __future__ import annotations

import pytest

from chaoskit.nemesis.protocol import ComposedNemesis, Nemesis, NoopNemesis, fault_op, with_error
from chaoskit.nemesis.schedule import Window
from chaoskit.nemesis.targets import Target, TargetSpecError, parse_target

WINDOW = Window(3, 1.0, 2.0, "kill", "broker:2", {"signal": "KILL"}, 99)


class Named:
    def __init__(self, name: str, fail_teardown: bool = False):
        self.name, self.fail_teardown, self.log = name, fail_teardown, []

    def setup(self, test):
        self.log.append("setup")

    def invoke(self, op):
        self.log.append(op["f"])
        return {**op, "value": {**op["value"], "resolved": self.name}}

    def teardown(self, test):
        self.log.append("teardown")
        if self.fail_teardown:
            raise RuntimeError(f"{self.name} teardown failed")


def test_fault_op_has_the_history_shape():
    assert fault_op("start", WINDOW) == {"process": "nemesis", "type": "info", "f": "start", "value": {
        "fault": "kill", "target": "broker:2", "params": {"signal": "KILL"}, "window": 3, "pick": 99}}
    with pytest.raises(ValueError, match="'start' or 'stop'"):
        fault_op("heal", WINDOW)
    assert with_error(fault_op("stop", WINDOW), TimeoutError("no answer"))["error"] == "TimeoutError: no answer"


def test_noop_nemesis_is_a_nemesis_and_changes_nothing():
    noop = NoopNemesis()
    assert isinstance(noop, Nemesis)
    op = fault_op("start", WINDOW)
    assert noop.invoke(op) == {**op, "value": {**op["value"], "resolved": None}}


def test_composed_nemesis_routes_by_fault_name_and_tears_everything_down():
    kill, cut = Named("kill", fail_teardown=True), Named("cut")
    composed = ComposedNemesis({"kill": kill, "partition": cut, "isolate": cut})
    composed.setup(None)
    assert composed.invoke(fault_op("start", WINDOW))["value"]["resolved"] == "kill"
    bad = fault_op("start", Window(0, 1.0, 2.0, "flood", "client", {}, 1))
    with pytest.raises(ValueError, match=r"no nemesis handles fault 'flood'; this one handles \['isolate', 'kill', 'partition'\]"):
        composed.invoke(bad)
    with pytest.raises(RuntimeError, match="kill teardown failed"):
        composed.teardown(None)
    assert cut.log == ["setup", "teardown"]  # once each, though it serves two names, and despite kill's failure
    assert kill.log == ["setup", "start", "teardown"]


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
