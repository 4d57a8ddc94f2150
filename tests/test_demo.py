"""`make demo` (chaoskit.demo): both sides are one seed's expansion story, patched with the ordered
client and unpatched with kafka-python, so the table compares like with like (the run itself is
what `make demo` does; its parts are tested in tests/run/)."""
from __future__ import annotations

from pathlib import Path

from chaoskit.demo import demo_tests
from chaoskit.run.chaostest import schedule_for


def test_both_sides_run_the_same_story_from_the_same_seed():
    patched, unpatched = demo_tests(seed=11, duration_s=25, reports=Path("reports"), engine="local")
    assert (patched.profile, patched.client) == ("patched", "ordered")
    assert (unpatched.profile, unpatched.client) == ("unpatched", "kafka-python")
    assert schedule_for(patched).to_json() == schedule_for(unpatched).to_json()
    expansions = [w.params["to"] for w in schedule_for(patched).windows if w.name == "admin"]
    assert expansions == [6, 8]
    assert {t.seed for t in (patched, unpatched)} == {11}
