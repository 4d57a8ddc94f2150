"""The synthetic history generator: seeded, linearizable by construction, and each planted
violation caught by the checker."""
from __future__ import annotations

import pytest

from chaoskit.checkers.linear import check
from chaoskit.checkers.linear.synthetic import KINDS, PLANTS, generate


def test_same_seed_same_history_other_seed_other_history():
    a = generate("list-append", seed=7, clients=4, ops=100)
    assert a.ops == generate("list-append", seed=7, clients=4, ops=100).ops
    assert a.ops != generate("list-append", seed=8, clients=4, ops=100).ops


def test_histories_are_concurrent_and_well_formed():
    ops = generate("cas-register", seed=3, clients=6, ops=300, info_rate=0.1).ops
    assert [op["index"] for op in ops] == list(range(len(ops)))
    assert {op["type"] for op in ops} == {"invoke", "ok", "fail", "info"}
    open_ops, most = set(), 0
    for op in ops:
        (open_ops.add if op["type"] == "invoke" else open_ops.discard)(op["process"])
        most = max(most, len(open_ops))
    assert most >= 4  # intervals of several clients overlap


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("info_rate", [0.0, 0.1])
def test_clean_histories_are_linearizable(kind, info_rate):
    for seed in range(4):
        history = generate(kind, seed=seed, clients=8, ops=400, keys=3, info_rate=info_rate)
        result = check(history.ops, kind)
        assert result.valid is True, (seed, result.witnesses)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("plant", PLANTS)
def test_each_planted_violation_is_caught(kind, plant):
    for seed in range(3):
        history = generate(kind, seed=seed, clients=5, ops=150, keys=2, info_rate=0.05, plant=plant)
        result = check(history.ops, kind, budget_s=20)
        assert result.valid is False, (seed, history.planted)
        assert result.counts["invalid"] == 1
        assert history.planted["kind"] == plant and history.planted["op"] >= 0


def test_bad_parameters_say_what_is_allowed():
    with pytest.raises(ValueError, match="list-append, kv, cas-register"):
        generate("queue")
    with pytest.raises(ValueError, match="stale-read, lost-write, real-time"):
        generate("list-append", plant="gremlins")


@pytest.mark.parametrize("kind", ["list-append", "kv"])
@pytest.mark.parametrize("plant", ["stale-read", "real-time"])
def test_the_witness_names_the_planted_read(kind, plant):
    for seed in range(3):
        history = generate(kind, seed=seed, clients=5, ops=300, keys=2, plant=plant)
        witness = check(history.ops, kind).witnesses[0]
        assert witness["op"] == history.planted["op"], (seed, history.planted, witness["explanation"])
        assert f"op {history.planted['op']} " in witness["explanation"]


def test_kv_histories_hold_strings_and_read_a_missing_key_as_empty():
    ops = generate("kv", seed=5, clients=4, ops=200, keys=2).ops
    assert all(isinstance(op["value"], str) for op in ops if op["f"] != "get" or op["type"] == "ok")
    assert "" in {op["value"] for op in ops if op["f"] == "get" and op["type"] == "ok"}
    assert any(len(op["value"]) > len("<0>") * 2 for op in ops if op["f"] == "get" and op["type"] == "ok")  # appends
