"""How the search makes a new schedule from one it keeps: small edits, stacked (AFL's havoc).

Each edit takes the schedule, the grammar and the seeded generator and gives another schedule,
repaired by the grammar (a step the edit made invalid where it stands is dropped), or None when it
has nothing to do (deleting from an empty schedule). `EDITS` names them; `edited` stacks one to
four and returns the schedule with the names of the edits that made it (the run log keeps them).
"""
from __future__ import annotations

import random
from dataclasses import replace
from typing import Callable

from chaoskit.explore.grammar import SETTINGS, Grammar
from chaoskit.explore.steps import Step, StepSchedule

MAX_STEPS = 12

Edit = Callable[[random.Random, StepSchedule, Grammar], "StepSchedule | None"]


def insert(rng: random.Random, s: StepSchedule, g: Grammar) -> StepSchedule | None:
    """A new step at a random time, drawn in the state the steps before it leave (with the settings
    its kind needs: an inserted zombie-isr story sets min.insync.replicas=2 and unclean elections)."""
    if len(s.steps) >= MAX_STEPS:
        return None
    t = round(rng.uniform(0.3, g.last_start_s), 2)
    step = g.draw_step(rng, g.model_at(s, t), t)
    return None if step is None else g.with_step(s, step)


def delete(rng: random.Random, s: StepSchedule, g: Grammar) -> StepSchedule | None:
    if not s.steps:
        return None
    i = rng.randrange(len(s.steps))
    return s.with_steps(s.steps[:i] + s.steps[i + 1:])


def move(rng: random.Random, s: StepSchedule, g: Grammar) -> StepSchedule | None:
    """A step opens somewhere else: near where it was, or anywhere."""
    if not s.steps:
        return None
    i = rng.randrange(len(s.steps))
    step = s.steps[i]
    at = step.at_s + rng.uniform(-2, 2) if rng.random() < 0.7 else rng.uniform(0.3, g.last_start_s)
    return _put(s, i, replace(step, at_s=round(min(max(0.0, at), g.last_start_s), 2)))


def swap(rng: random.Random, s: StepSchedule, g: Grammar) -> StepSchedule | None:
    """Two steps trade their times: the same steps, in another order."""
    if len(s.steps) < 2:
        return None
    i, j = rng.sample(range(len(s.steps)), 2)
    a, b = s.steps[i], s.steps[j]
    steps = list(s.steps)
    steps[i], steps[j] = replace(a, at_s=b.at_s), replace(b, at_s=a.at_s)
    return s.with_steps(steps)


def retarget(rng: random.Random, s: StepSchedule, g: Grammar) -> StepSchedule | None:
    """A step of the same fault at the same time, with its target (and pick) drawn again."""
    if not s.steps:
        return None
    i = rng.randrange(len(s.steps))
    step = s.steps[i]
    kind = g.kinds.get(step.fault)
    if kind is None:
        return None
    others = s.with_steps(s.steps[:i] + s.steps[i + 1:])
    drawn = kind.draw(rng, g.model_at(others, step.at_s), step.at_s)
    if drawn is None:
        return None
    return _put(s, i, replace(drawn, window_s=step.window_s))


def retime(rng: random.Random, s: StepSchedule, g: Grammar) -> StepSchedule | None:
    """A step's window longer or shorter."""
    if not s.steps:
        return None
    i = rng.randrange(len(s.steps))
    step = s.steps[i]
    window = round(max(0.3, min(10.0, step.window_s * rng.choice([0.5, 0.75, 1.5, 2.0]))), 1)
    return _put(s, i, replace(step, window_s=window))


def resetting(rng: random.Random, s: StepSchedule, g: Grammar) -> StepSchedule | None:
    """One of the topic's settings switched: set when it was not, back to the default when it was."""
    if not g.setting_names:
        return None
    name = rng.choice(g.setting_names)
    settings = {k: v for k, v in s.settings.items() if k != name}
    if name not in s.settings:
        settings[name] = SETTINGS[name][0]
    return replace(s, settings=settings)


def _put(s: StepSchedule, i: int, step: Step) -> StepSchedule:
    return s.with_steps(s.steps[:i] + (step,) + s.steps[i + 1:])


EDITS: dict[str, Edit] = {"insert": insert, "delete": delete, "move": move, "swap": swap, "retarget": retarget,
                          "retime": retime, "setting": resetting}
WEIGHTS = {"insert": 3, "delete": 1, "move": 2, "swap": 1, "retarget": 2, "retime": 1, "setting": 1}


def splice(rng: random.Random, a: StepSchedule, b: StepSchedule, g: Grammar) -> StepSchedule:
    """The first part of `a` up to a time and the rest of `b` (AFL's splice), repaired."""
    t = rng.uniform(0.3, g.last_start_s)
    return g.repaired(a.with_steps([s for s in a.steps if s.at_s < t] + [s for s in b.steps if s.at_s >= t]))


def edited(rng: random.Random, s: StepSchedule, g: Grammar, other: StepSchedule | None = None,
           tries: int = 20) -> tuple[StepSchedule, list[str]]:
    """One to four edits stacked on `s` (and a splice with `other` now and then), giving a valid
    schedule unlike `s`; (s, []) when none could be made in `tries`."""
    names, weights = list(WEIGHTS), list(WEIGHTS.values())
    for _ in range(tries):
        out, done = s, []
        if other is not None and rng.random() < 0.15:
            out, done = splice(rng, s, other, g), ["splice"]
        for name in rng.choices(names, weights, k=rng.choice([1, 1, 2, 2, 3, 4])):
            made = EDITS[name](rng, out, g)
            if made is not None:
                out = g.repaired(made)
                done.append(name)
        if done and out.digest != s.digest and out.steps:
            return out, done
    return s, []
