"""ComposedNemesis (chaoskit.nemesis.compose): routing by fault name, one setup and teardown per part."""
from __future__ import annotations

import pytest

from chaoskit.nemesis.compose import ComposedNemesis
from chaoskit.nemesis.ops import fault_op
from chaoskit.nemesis.schedule import Window

WINDOW = Window(3, 1.0, 2.0, "kill", "broker:2", {"signal": "KILL"}, 99)


class Named:
    def __init__(self, name: str, fail_teardown: bool = False):
        self.name, self.fail_teardown, self.log = name, fail_teardown, []

    def setup(self, test):
        self.log.append("setup")

    def invoke(self, test, op):
        self.log.append(op["f"])
        return {**op, "value": {**op["value"], "resolved": self.name}}

    def teardown(self, test):
        self.log.append("teardown")
        if self.fail_teardown:
            raise RuntimeError(f"{self.name} teardown failed")


def test_composed_nemesis_routes_by_fault_name_and_tears_everything_down():
    kill, cut = Named("kill", fail_teardown=True), Named("cut")
    composed = ComposedNemesis({"kill": kill, "partition": cut, "isolate": cut})
    composed.setup(None)
    assert composed.invoke(None, fault_op("start", WINDOW))["value"]["resolved"] == "kill"
    bad = fault_op("start", Window(0, 1.0, 2.0, "flood", "client", {}, 1))
    with pytest.raises(ValueError, match=r"no nemesis handles fault 'flood'; this one handles \['isolate', 'kill', 'partition'\]"):
        composed.invoke(None, bad)
    with pytest.raises(RuntimeError, match="kill teardown failed"):
        composed.teardown(None)
    assert cut.log == ["setup", "teardown"]  # once each, though it serves two names, and despite kill's failure
    assert kill.log == ["setup", "start", "teardown"]
