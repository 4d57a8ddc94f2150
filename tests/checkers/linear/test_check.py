"""The check as a whole: clear errors for bad input, the per-sub-history time budget giving
"unknown" (but never hiding an invalid sub-history), and the result's shape."""
from __future__ import annotations

import json

import pytest

from chaoskit.checkers.linear import check
from chaoskit.checkers.linear.models import HistoryError
from chaoskit.checkers.linear.synthetic import generate


def test_unknown_model_names_the_choices():
    with pytest.raises(ValueError, match="cas-register, kafka, kv"):
        check([], "queue")


def test_budget_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        check([], "list-append", budget_s=0)


@pytest.mark.parametrize("rows,message", [
    ([(0, "invoke", "frob", 1)], "not an operation of the cas-register model"),
    ([(0, "ok", "write", 1)], "no invoke of process 0"),
    ([(0, "invoke", "write", 1), (0, "invoke", "write", 2)], "invoked again before its op 0 completed"),
    ([(0, "invoke", "cas", 1), (0, "ok", "cas", 1)], r"a cas value is \[old, new\]"),
    ([(0, "done", "write", 1)], "type is invoke, ok, fail or info"),
])
def test_malformed_histories_say_what_is_wrong(history, rows, message):
    with pytest.raises(HistoryError, match=message):
        check(history(*rows), "cas-register")


def test_a_sub_history_out_of_budget_is_unknown_with_the_reason():
    big = generate("list-append", seed=1, clients=5, ops=1500, keys=1).ops
    result = check(big, "list-append", budget_s=1e-9)
    assert result.valid == "unknown"
    assert "budget" in result.error and result.counts["unknown"] == 1
    assert result.details["unknown"][0]["key"] == 0


def test_an_invalid_sub_history_beats_an_undecided_one(history):
    big = generate("list-append", seed=1, clients=5, ops=1500, keys=1).ops  # key 0: too big for the budget
    bad = history((90, "invoke", "put", 1, "other"), (90, "ok", "put", 1, "other"),
                  (91, "invoke", "get", None, "other"), (91, "ok", "get", 2, "other"))
    for i, op in enumerate(bad):
        op["index"] = len(big) + i
    result = check(big + bad, "list-append", budget_s=1e-9)
    assert result.valid is False
    assert result.counts["unknown"] == 1 and result.counts["invalid"] == 1
    assert result.witnesses[0]["key"] == "other"


def test_result_is_json_serializable(history):
    ops = history((0, "invoke", "put", [1, 2], "k"), (0, "ok", "put", [1, 2], "k"),
                  (1, "invoke", "get", None, "k"), (1, "ok", "get", [1], "k"))
    result = check(ops, "list-append")
    assert result.valid is False
    data = json.loads(json.dumps(result.to_json()))
    assert data["witnesses"][0]["state"] == [1, 2] and data["counts"]["ops"] == 2


def test_a_pandas_frame_of_ops_checks_like_the_dicts():
    import pandas as pd

    history = generate("list-append", seed=4, clients=4, ops=200, keys=2, plant="stale-read")
    frame = pd.DataFrame(history.ops)  # lists stay objects; a get's missing invoke value is None/NaN
    by_frame, by_dicts = check(frame, "list-append"), check(history.ops, "list-append")
    assert by_frame.valid is by_dicts.valid is False
    assert by_frame.witnesses[0]["op"] == by_dicts.witnesses[0]["op"]


def test_the_search_is_memory_bounded_too():
    from chaoskit.checkers.linear.models import model_named
    from chaoskit.checkers.linear.search import search
    from chaoskit.checkers.linear.subhistory import split

    model = model_named("list-append")
    (sub,) = split(generate("list-append", seed=1, clients=5, ops=1500, keys=1).ops, model).values()
    assert search(sub, model).valid is True
    bounded = search(sub, model, max_configs=100)
    assert bounded.valid == "unknown" and "more than 100 configurations" in bounded.error
