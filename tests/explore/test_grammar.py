"""The grammar (chaoskit.explore.grammar): every step drawn is valid where it stands, the admin
changes follow the topic's state, a schedule that loses a step loses the steps that needed it, and
every installed fault can be drawn."""
from __future__ import annotations

import random
from dataclasses import replace

from chaoskit.explore.edits import insert
from chaoskit.explore.grammar import BROKER, Grammar, Model, StepKind, generic_kind
from chaoskit.explore.steps import Step, StepSchedule


def shrink(at: float, to: int, **params) -> Step:
    return Step("admin", at, 0.5, "client", {"op": "shrink", "topic": "orders", "to": to, **params})


def expand(at: float, to: int, **params) -> Step:
    return Step("admin", at, 0.5, "client", {"op": "expand", "topic": "orders", "to": to, **params})


def test_random_schedules_are_valid_and_come_from_the_seed(grammar: Grammar):
    for seed in range(60):
        s = grammar.random_schedule(random.Random(seed))
        assert grammar.valid(s), s.lines()
        assert s == grammar.random_schedule(random.Random(seed))
        assert all(0 <= x.at_s <= grammar.last_start_s for x in s.steps)


def test_every_installed_fault_is_in_the_grammar_and_drawn(grammar: Grammar):
    from chaoskit.pluginmanager import collect, get_plugin_manager

    assert set(grammar.kinds) == set(collect(get_plugin_manager(), "faults"))
    drawn = {x.fault for seed in range(800) for x in grammar.random_schedule(random.Random(seed), (4, 8)).steps}
    assert drawn == set(grammar.kinds)


def test_a_topic_never_shrinks_below_its_first_count_nor_twice_while_partitions_are_marked(grammar: Grammar):
    settings = {}
    assert not grammar.valid(StepSchedule((shrink(1, 3),), settings))  # created with 4
    assert grammar.valid(StepSchedule((expand(1, 6), shrink(2, 5)), settings))
    assert not grammar.valid(StepSchedule((expand(1, 8), shrink(2, 6), shrink(3, 5)), settings))
    assert grammar.valid(StepSchedule((expand(1, 8), shrink(2, 6, delay_ms=1000), shrink(4, 5)), settings))


def test_a_topic_grows_again_after_a_shrink_only_by_waiting_for_the_removal(grammar: Grammar):
    assert not grammar.valid(StepSchedule((expand(1, 6), shrink(2, 5), expand(3, 6))))
    assert grammar.valid(StepSchedule((expand(1, 6), shrink(2, 5), expand(3, 6, removed_within_s=15))))
    assert grammar.valid(StepSchedule((expand(1, 6), shrink(2, 5, immediate=True), expand(3, 6))))


def test_dropping_a_step_drops_the_steps_that_needed_it(grammar: Grammar):
    drain = Step("delete-records", 3.0, 1.0, "client", {"topic": "orders"})
    leader5 = Step("kill", 2.5, 1.0, "leader-of:orders/5", {})
    whole = StepSchedule((expand(1, 6), shrink(2, 5), leader5, drain))
    assert grammar.valid(whole)
    without_growth = grammar.repaired(whole.with_steps(whole.steps[1:]))
    assert without_growth.steps == ()  # no shrink below 4, no marked partition, no partition 5


def test_one_step_at_a_time_takes_a_broker_down_and_a_fault_plays_one_window_at_a_time(grammar: Grammar):
    kill = Step("kill", 1.0, 2.0, "random-broker", {})
    pause = Step("pause", 2.0, 1.0, "leader-of:orders/0", {})
    assert not grammar.valid(StepSchedule((kill, pause)))
    assert grammar.valid(StepSchedule((kill, Step("pause", 2.0, 1.0, "active-controller", {}))))
    assert not grammar.valid(StepSchedule((kill, Step("kill", 2.5, 1.0, "active-controller", {}))))


def test_an_unclean_election_needs_a_topic_that_allows_one(grammar: Grammar):
    story = Step("unclean-election", 1.0, 4.0, "leader-of:orders/0", {"consumers": "reading"})
    assert not grammar.valid(StepSchedule((story,), {"unclean.leader.election.enable": "false"}))
    assert grammar.valid(StepSchedule((story,), {"unclean.leader.election.enable": "true"}))


def test_a_plugin_fault_without_a_kind_is_drawn_generically_and_one_with_a_kind_as_it_says():
    own = StepKind("flood", 1.0, lambda rng, model, t: Step("flood", t, 1.0, "client", {"rate": 9}))
    g = Grammar.for_faults(["flood", "quake"], {"orders": 4}, 10.0, kinds={"flood": own})
    assert g.kinds["flood"] is own and g.kinds["quake"].takes_down == BROKER
    steps = [x for seed in range(20) for x in g.random_schedule(random.Random(seed)).steps]
    assert {x.fault for x in steps} == {"flood", "quake"}
    assert all(x.params == {"rate": 9} for x in steps if x.fault == "flood")
    assert {x.target for x in steps if x.fault == "quake"} <= {"random-broker", "active-controller"}
    assert generic_kind("quake").draw(random.Random(1), g.model({}), 1.0).fault == "quake"


def test_the_model_at_a_time_is_what_the_steps_before_it_leave(grammar: Grammar):
    s = StepSchedule((expand(1, 6), shrink(2, 5, delay_ms=3000)))
    assert grammar.model_at(s, 1.5).topics["orders"].count == 6
    m = grammar.model_at(s, 3.0)
    assert m.topics["orders"].count == 5 and m.topics["orders"].marked(3.0) and not m.topics["orders"].marked(5.5)


def test_settings_the_base_sets_are_never_drawn():
    g = Grammar.for_faults(["kill"], {"orders": 4}, 10.0, fixed={"min.insync.replicas": "2"})
    assert all("min.insync.replicas" not in g.random_schedule(random.Random(s)).settings for s in range(10))


def test_a_run_lasts_the_base_s_time_or_what_its_staged_story_needs(grammar: Grammar):
    assert grammar.run_length(StepSchedule((expand(1, 6),))) == grammar.duration_s
    story = Step("unclean-election", 6.0, 4.0, "leader-of:orders/0", {})
    assert grammar.run_length(StepSchedule((story,), {"unclean.leader.election.enable": "true"})) == 6 + 4 + 12 + 2
    late = Step("zombie-rejoin", 9.0, 6.0, "leader-of:orders/0", {})
    assert grammar.run_length(StepSchedule((late,))) == 3 * grammar.duration_s  # at most three times the base's


def test_a_story_drawn_brings_the_settings_it_needs(grammar: Grammar):
    stories = [s for seed in range(300) for s in [grammar.random_schedule(random.Random(seed), (3, 6))]
               if any(x.fault == "zombie-isr" for x in s.steps)]
    assert stories, "no schedule of 300 drew the zombie-isr story"
    for s in stories:
        assert s.settings.get("min.insync.replicas") == "2" and s.settings.get("unclean.leader.election.enable") == "true"
        assert grammar.valid(s)
    inserted = [made for seed in range(300) if (made := insert(random.Random(seed), StepSchedule(()), grammar))
                and made.steps[0].fault == "zombie-isr"]
    assert inserted and all(grammar.valid(s) and s.settings["min.insync.replicas"] == "2" for s in inserted)
    rejoins = [s for seed in range(300) for s in [grammar.random_schedule(random.Random(seed), (3, 6))]
               if any(x.fault == "zombie-rejoin" for x in s.steps)]
    assert rejoins and all(s.settings.get("min.insync.replicas") == "2" and grammar.valid(s) for s in rejoins)


def test_a_story_whose_settings_the_base_sets_otherwise_is_never_drawn():
    g = Grammar.for_faults(["zombie-isr", "kill"], {"orders": 4}, 10.0, fixed={"min.insync.replicas": "1"})
    assert all(x.fault == "kill" for seed in range(100) for x in g.random_schedule(random.Random(seed)).steps)
    same = Grammar.for_faults(["zombie-isr"], {"orders": 4}, 10.0, fixed={"min.insync.replicas": "2"})
    drawn = [s for seed in range(50) if (s := same.random_schedule(random.Random(seed))).steps]
    assert drawn and all(s.settings["unclean.leader.election.enable"] == "true" and same.valid(s) for s in drawn)
    assert all("min.insync.replicas" not in s.settings for s in drawn)  # the base's own, not the schedule's


def test_kinds_no_run_has_tried_are_drawn_more_often(grammar: Grammar):
    def share(g: Grammar) -> float:
        steps = [x.fault for seed in range(400) for x in g.random_schedule(random.Random(seed), (3, 5)).steps]
        return steps.count("zombie-isr") / len(steps)
    plain = share(grammar)
    grammar.novel = frozenset({"zombie-isr"})
    try:
        assert share(grammar) > 2.5 * plain > 0
    finally:
        grammar.novel = frozenset()


def test_a_stale_shrink_comes_with_ordered_delivery_off_and_leaves_its_growth_marked(grammar: Grammar):
    drawn = [s for seed in range(300) for s in [grammar.random_schedule(random.Random(seed), (3, 6))]
             if any(x.fault == "stale-shrink" for x in s.steps)]
    assert drawn, "no schedule of 300 drew the stale-shrink story"
    assert all(s.settings.get("enable.ordered.delivery") == "false" and grammar.valid(s) for s in drawn)
    step = Step("stale-shrink", 1.0, 4.0, "client", {"topic": "orders", "grow": 2, "delay_ms": 2000})
    model = Model.start({"orders": 4}, 10.0, settings={"enable.ordered.delivery": "false"})
    assert grammar.kinds["stale-shrink"].check(step, model)
    grammar.kinds["stale-shrink"].apply(step, model)
    topic = model.topics["orders"]
    assert (topic.count, topic.partitions(6.9), topic.partitions(7.1)) == (4, 6, 4)
    assert not grammar.kinds["stale-shrink"].check(step, Model.start({"orders": 4}, 10.0))  # ordered delivery on


def test_on_a_broker_without_the_proposals_the_search_draws_only_what_it_has():
    """tansu over PostgreSQL: no KIP step, no zombie, no controller, no follower or coordinator (read from
    ZooKeeper); its storage is a target. A fault it cannot take, asked for by name, is refused."""
    import pytest

    from chaoskit.explore.search import grammar_for
    from chaoskit.explore.steps import default_base

    base = replace(default_base(), broker="tansu", broker_storage="postgres", brokers=3, client="kafka-python")
    g = grammar_for(base)
    steps = [x for seed in range(400) for x in g.random_schedule(random.Random(seed), (4, 8)).steps]
    assert {x.fault for x in steps} == {"kill", "pause", "restart", "partition", "clients",
                                         "latency", "bandwidth", "slicer", "reset-peer", "slow-close", "limit-data"}
    targets = {x.target.partition(":")[0] for x in steps}
    assert "storage" in targets and not targets & {"coordinator", "follower-of", "active-controller"}
    on_sqlite = grammar_for(replace(base, broker_storage="sqlite", brokers=1))
    assert "storage" not in {x.target for seed in range(200)
                             for x in on_sqlite.random_schedule(random.Random(seed), (4, 8)).steps}
    with pytest.raises(ValueError, match="fault zombie-isr: tansu 0.6.0 does not implement"):
        grammar_for(base, ["zombie-isr"])


def test_a_fault_needing_the_ordered_clients_hooks_is_never_drawn_for_a_stock_client():
    """freeze-client-metadata needs freeze_metadata()/thaw_metadata(): drawn for the ordered client,
    not for kafka-python (where it would fail as it starts); asked for by name, refused."""
    import pytest

    from chaoskit.explore.search import grammar_for
    from chaoskit.explore.steps import default_base

    assert "freeze-client-metadata" in grammar_for(replace(default_base(), client="ordered")).kinds
    stock = replace(default_base(), client="kafka-python")
    assert "freeze-client-metadata" not in grammar_for(stock).kinds
    with pytest.raises(ValueError, match="client kafka-python lacks freeze_metadata"):
        grammar_for(stock, ["freeze-client-metadata"])
