"""Edits (chaoskit.explore.edits): each gives a valid schedule or nothing, stacked edits give a
schedule unlike the parent, and all of it follows the seed."""
from __future__ import annotations

import random

import pytest

from chaoskit.explore.edits import EDITS, MAX_STEPS, edited, splice
from chaoskit.explore.grammar import Grammar
from chaoskit.explore.steps import StepSchedule


@pytest.mark.parametrize("name", sorted(EDITS))
def test_each_edit_gives_a_valid_schedule_or_nothing(grammar: Grammar, name: str):
    made = 0
    for seed in range(40):
        parent = grammar.random_schedule(random.Random(seed))
        out = EDITS[name](random.Random(seed), parent, grammar)
        if out is not None:
            made += 1
            assert grammar.valid(grammar.repaired(out))
            assert len(out.steps) <= MAX_STEPS
    assert made > 0


def test_an_empty_schedule_can_only_grow(grammar: Grammar):
    empty = StepSchedule((), {})
    for name in ("delete", "move", "swap", "retarget", "retime"):
        assert EDITS[name](random.Random(1), empty, grammar) is None
    assert EDITS["insert"](random.Random(1), empty, grammar) is not None


def test_stacked_edits_differ_from_the_parent_and_follow_the_seed(grammar: Grammar):
    for seed in range(30):
        parent = grammar.random_schedule(random.Random(seed))
        other = grammar.random_schedule(random.Random(seed + 100))
        child, names = edited(random.Random(seed), parent, grammar, other)
        assert names and child.digest != parent.digest and grammar.valid(child) and child.steps
        assert edited(random.Random(seed), parent, grammar, other) == (child, names)


def test_a_splice_takes_the_first_part_of_one_and_the_rest_of_the_other(grammar: Grammar):
    a = grammar.random_schedule(random.Random(5), steps=(4, 6))
    b = grammar.random_schedule(random.Random(6), steps=(4, 6))
    out = splice(random.Random(7), a, b, grammar)
    assert grammar.valid(out)
    assert {s.to_json()["at_s"] for s in out.steps} <= {s.at_s for s in a.steps + b.steps}
