"""The search against a brute-force oracle: on many small random histories (some linearizable,
most not; with info and failed ops) the pruned Wing-Gong/Lowe search and an exhaustive try of
every order agree, for every model."""
from __future__ import annotations

import itertools
import random

import pytest

from chaoskit.checkers.linear.models import INCONSISTENT, model_named
from chaoskit.checkers.linear.search import search, unseen_indeterminate
from chaoskit.checkers.linear.subhistory import Operation, split

VALUES = [None, 1, 2, 3]
TEXTS = ["a", "b", "ab"]  # kv writes; gets see these, their concatenations, "" or None (missing)
SEEN_TEXTS = [None, "", "a", "b", "ab", "ba", "aab", "abb", "bab"]


def brute_force(ops: list[Operation], model) -> bool:
    """Some subset of the indeterminate ops plus every completed op, in some order that respects
    real time, runs on the model."""
    done = [op for op in ops if op.ret is not None]
    maybe = [op for op in ops if op.ret is None]
    for k in range(len(maybe) + 1):
        for extra in itertools.combinations(maybe, k):
            chosen = done + list(extra)
            for order in itertools.permutations(chosen):
                if any(a.ret is not None and a.ret < b.call for i, b in enumerate(order) for a in order[i + 1:]):
                    continue  # a placed after b although a returned before b began
                state = model.initial
                for op in order:
                    state = model.steps[op.f](state, op.arg)
                    if state is INCONSISTENT:
                        break
                else:
                    return True
    return False


def random_history(rng: random.Random, kind: str, size: int) -> list[dict]:
    """`size` ops from 3 processes with random overlaps, values and outcomes."""
    events, open_ops = [], {}
    while len(events) < 2 * size or open_ops:
        process = rng.randrange(3)
        if process in open_ops:
            f, value = open_ops.pop(process)
            kind_of_end = rng.choices(["ok", "info", "fail"], [8, 1, 1])[0]
            result = rng.choice(VALUES) if f in ("read", "get") else value
            if kind == "list-append" and f == "get" and rng.random() < 0.5:
                result = rng.choice([[1], [1, 2], [2, 1], [3]])
            if kind == "kv" and f == "get":
                result = rng.choice(SEEN_TEXTS)
            events.append({"process": process, "type": kind_of_end, "f": f, "value": result, "key": "k"})
        elif len(events) < 2 * size:
            if kind in ("list-append", "kv"):
                f = rng.choice(["get", "put", "append"])
                value = None if f == "get" else rng.choice(TEXTS if kind == "kv" else VALUES[1:])
            else:
                f = rng.choice(["read", "write", "cas"])
                value = None if f == "read" else (
                    [rng.choice(VALUES), rng.choice(VALUES[1:])] if f == "cas" else rng.choice(VALUES[1:]))
            open_ops[process] = (f, value)
            events.append({"process": process, "type": "invoke", "f": f, "value": value, "key": "k"})
    for index, op in enumerate(events):
        op["index"] = index
    return events


@pytest.mark.parametrize("kind", ["cas-register", "list-append", "kv"])
def test_search_agrees_with_brute_force(kind):
    rng = random.Random(20261123)
    model = model_named(kind)
    verdicts = {True: 0, False: 0}
    for _ in range(400):
        ops = random_history(rng, kind, rng.randrange(2, 7))
        for sub in split(ops, model).values():
            expected = brute_force(sub, model)
            assert search(sub, model).valid is expected, ops
            verdicts[expected] += 1
    assert min(verdicts.values()) > 50  # both verdicts were exercised


def test_log_search_agrees_with_brute_force():
    rng = random.Random(7)
    model = model_named("kafka")
    verdicts = {True: 0, False: 0}
    for _ in range(300):
        events, open_ops = [], {}
        while len(events) < 6 or open_ops:
            process = rng.randrange(3)
            if process in open_ops:
                f, value = open_ops.pop(process)
                end = {"process": process, "type": rng.choices(["ok", "info"], [9, 1])[0], "f": f, "partition": 0}
                if f == "send":
                    end.update(value=value, offset=rng.randrange(2))
                else:
                    records = [[o, rng.choice("ab")] for o in range(rng.randrange(2))]
                    end["value"] = records if f == "read" else records[rng.randrange(2):]
                events.append(end)
            elif len(events) < 6:
                f = rng.choice(["send", "read", "poll"])
                value = rng.choice("ab") if f == "send" else 0
                open_ops[process] = (f, value)
                events.append({"process": process, "type": "invoke", "f": f, "value": value, "partition": 0})
        for index, op in enumerate(events):
            op["index"] = index
        for sub in split(events, model).values():
            expected = brute_force(sub, model)
            assert search(sub, model).valid is expected, events
            verdicts[expected] += 1
    assert min(verdicts.values()) > 20


def test_only_indeterminate_ops_nobody_saw_are_left_out():
    model = model_named("cas-register")
    ops = [{"process": 0, "type": "invoke", "f": "write", "value": 1}, {"process": 0, "type": "info", "f": "write", "value": 1},
           {"process": 1, "type": "invoke", "f": "write", "value": 2}, {"process": 1, "type": "info", "f": "write", "value": 2},
           {"process": 2, "type": "invoke", "f": "cas", "value": [3, 4]}, {"process": 2, "type": "info", "f": "cas", "value": [3, 4]},
           {"process": 3, "type": "invoke", "f": "read", "value": None}, {"process": 3, "type": "ok", "f": "read", "value": 1},
           {"process": 3, "type": "invoke", "f": "cas", "value": [2, 5]}, {"process": 3, "type": "fail", "f": "cas", "value": [2, 5]}]
    (sub,) = split(ops, model).values()
    # 1 was read; 2 only by a cas that failed (failed ops are gone); the cas's 4 nobody saw
    assert {(op.f, op.arg) for op in unseen_indeterminate(sub, model)} == {("write", 2), ("cas", (3, 4))}
    assert unseen_indeterminate(sub, model_named("kafka")) == []  # offsets shift: the log never drops


def test_kv_leaves_out_only_text_no_get_shows():
    model = model_named("kv")
    ops = [{"process": p, "type": t, "f": f, "value": v, "key": "k"} for p, t, f, v in [
        (0, "invoke", "append", "xy"), (0, "info", "append", "xy"),
        (1, "invoke", "put", "zz"), (1, "info", "put", "zz"),
        (2, "invoke", "append", "q"), (2, "info", "append", "q"),
        (3, "invoke", "get", None), (3, "ok", "get", "axyb")]]
    (sub,) = split(ops, model).values()
    # "xy" shows inside "axyb" (appended text stays visible after later appends); "zz" and "q" nowhere
    assert {op.arg for op in unseen_indeterminate(sub, model)} == {"zz", "q"}
