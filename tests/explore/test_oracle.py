"""The oracle (chaoskit.explore.oracle): what a schedule's own steps excuse, and nothing more."""
from __future__ import annotations

from chaoskit.explore.coverage import Event, RunCoverage
from chaoskit.explore.oracle import excused, removes_unread
from chaoskit.explore.steps import Step, StepSchedule

NONE = RunCoverage(frozenset(), ())
UNCLEAN = RunCoverage(frozenset(), (Event(3.0, "election:unclean", "orders", 0),))


def shrink(**params) -> StepSchedule:
    return StepSchedule((Step("admin", 4.0, 0.5, "client", {"op": "shrink", "topic": "orders", "to": 4, **params}),))


def verdict(*found: str, duplicate_places=(), on=()) -> dict:
    """results.json's verdict with `found` anomalies; `on`: the (topic, partition) of each one's witnesses."""
    results = {name: {"valid": False, "witnesses": [{"topic": t, "partition": p} for t, p in on]} for name in found}
    if "duplicate" in results:
        results["duplicate"]["witnesses"] = [{"positions": [list(p) for p in duplicate_places]}]
    return {"results": {**results, "lost-write": results.get("lost-write", {"valid": True})}}


def test_a_removal_that_does_not_wait_for_the_group_excuses_lost_and_unseen_writes_only():
    assert removes_unread(shrink(immediate=True), 30) and removes_unread(shrink(delay_ms=3000), 30)
    assert not removes_unread(shrink(), 30) and not removes_unread(shrink(delay_ms=60_000), 30)
    why = excused(verdict("unseen", "key-order"), shrink(immediate=True), NONE, {"orders"}, 30)
    assert set(why) == {"unseen"}
    assert excused(verdict("unseen"), shrink(), NONE, {"orders"}, 30) == {}
    stale = StepSchedule((Step("stale-shrink", 4.0, 3.0, "client", {"topic": "orders", "grow": 2, "delay_ms": 1000}),))
    assert removes_unread(stale, 30) and not removes_unread(stale, 4.5)


def test_an_unclean_election_of_the_run_s_topic_leaves_only_what_kip_320_promises():
    found = verdict("lost-write", "unseen", "nonmonotonic-send", "truncation-undetected", "key-order")
    why = excused(found, StepSchedule(), UNCLEAN, {"orders"}, 30)
    assert set(why) == {"lost-write", "unseen", "nonmonotonic-send", "key-order"}
    assert excused(found, StepSchedule(), UNCLEAN, {"other"}, 30) == {}  # another topic's election excuses nothing


def test_a_duplicate_is_excused_only_where_every_place_was_elected_uncleanly():
    on_it = verdict("duplicate", duplicate_places=[("orders", 0, 38), ("orders", 0, 40)])
    assert set(excused(on_it, StepSchedule(), UNCLEAN, {"orders"}, 30)) == {"duplicate"}
    elsewhere = verdict("duplicate", duplicate_places=[("orders", 0, 38), ("orders", 1, 7)])
    assert excused(elsewhere, StepSchedule(), UNCLEAN, {"orders"}, 30) == {}
    assert excused(on_it, StepSchedule(), NONE, {"orders"}, 30) == {}


def test_the_unclean_election_the_zombie_isr_story_stages_excuses_nothing():
    story = Event(2.0, "fault:zombie-isr", process="nemesis",
                  value={"topic": "orders", "partition": 0, "elected": {"from": 3, "to": 1}, "rejoined": True})
    staged = RunCoverage(frozenset(), (story, Event(3.0, "election:unclean", "orders", 0, value=(3, 1))))
    assert excused(verdict("lost-write", "unseen"), StepSchedule(), staged, {"orders"}, 30) == {}
    other = RunCoverage(frozenset(), (story, Event(3.0, "election:unclean", "orders", 1, value=(2, 1))))
    assert set(excused(verdict("unseen"), StepSchedule(), other, {"orders"}, 30)) == {"unseen"}
    # the same two brokers' election of another partition (the killed leader led both) is not the story's
    alike = RunCoverage(frozenset(), (story, Event(3.0, "election:unclean", "orders", 2, value=(3, 1))))
    assert set(excused(verdict("unseen", on=[("orders", 2)]), StepSchedule(), alike, {"orders"}, 30)) == {"unseen"}
    assert excused(verdict("unseen", on=[("orders", 0)]), StepSchedule(), alike, {"orders"}, 30) == {}


def test_an_unclean_election_excuses_no_witness_on_a_partition_it_did_not_elect():
    found = verdict("inconsistent-offsets", on=[("orders", 0), ("orders", 1)])
    assert excused(found, StepSchedule(), UNCLEAN, {"orders"}, 30) == {}  # p1 was never elected uncleanly
    only_p0 = verdict("inconsistent-offsets", "unseen", on=[("orders", 0)])
    assert set(excused(only_p0, StepSchedule(), UNCLEAN, {"orders"}, 30)) == {"inconsistent-offsets", "unseen"}


def test_a_client_is_held_only_to_the_guarantees_it_claims():
    found = verdict("key-order", "truncation-undetected", "unseen")
    stock = frozenset({"kip320-truncation-detection"})  # kafka-python's claim
    assert excused(found, StepSchedule(), NONE, {"orders"}, 30, stock) == {
        "key-order": "the client does not claim kip253-key-order"}
    assert excused(found, StepSchedule(), NONE, {"orders"}, 30, None) == {}
