"""The kv model (Porcupine's key-value model: a string per key, "" when missing; put sets, append
concatenates, get returns the string) on hand-built histories: linearizable ones check valid,
each kind of violation is caught with a witness naming the get that cannot be placed."""
from __future__ import annotations

import pytest

from chaoskit.checkers.linear import check
from chaoskit.checkers.linear.models import HistoryError
from chaoskit.history.jepsen import from_jepsen_ops


def kv(history, *rows):
    """Rows (process, type, f, value) all on key "k"."""
    return check(history(*(row + ("k",) for row in rows)), "kv")


CONCURRENT_APPENDS = [(0, "invoke", "append", "x"), (1, "invoke", "append", "y"),
                      (0, "ok", "append", "x"), (1, "ok", "append", "y"), (2, "invoke", "get", None)]


@pytest.mark.parametrize("seen,valid", [("xy", True), ("yx", True), ("x", False), ("xyx", False), ("", False)])
def test_concurrent_appends_concatenate_in_some_order(history, seen, valid):
    result = kv(history, *CONCURRENT_APPENDS, (2, "ok", "get", seen))
    assert result.valid is valid
    if not valid:
        assert result.witnesses[0]["op"] == 4 and result.witnesses[0]["state"] in ("xy", "yx", "x", "y")


def test_the_order_one_get_saw_binds_later_gets(history):
    rows = [*CONCURRENT_APPENDS, (2, "ok", "get", "yx"), (2, "invoke", "get", None)]
    assert kv(history, *rows, (2, "ok", "get", "yx")).valid is True
    result = kv(history, *rows, (2, "ok", "get", "xy"))  # the two gets disagree on the order
    assert result.valid is False and result.witnesses[0]["op"] == 6


def test_a_missing_key_reads_as_the_empty_string_or_null(history):
    rows = [(0, "invoke", "get", None), (0, "ok", "get", ""), (1, "invoke", "get", None), (1, "ok", "get", None),
            (0, "invoke", "append", "a"), (0, "ok", "append", "a"), (1, "invoke", "get", None)]
    assert kv(history, *rows, (1, "ok", "get", "a")).valid is True
    result = kv(history, *rows, (1, "ok", "get", None))  # null is "", and the key holds "a" by now
    assert result.valid is False and result.witnesses[0]["op"] == 6 and "get returned ''" in \
        result.witnesses[0]["explanation"]


def test_a_put_of_the_empty_string_is_indistinguishable_from_a_missing_key(history):
    rows = [(0, "invoke", "put", "a"), (0, "ok", "put", "a"), (0, "invoke", "put", ""), (0, "ok", "put", ""),
            (1, "invoke", "get", None)]
    assert kv(history, *rows, (1, "ok", "get", None)).valid is True
    assert kv(history, *rows, (1, "ok", "get", "")).valid is True
    assert kv(history, *rows, (1, "ok", "get", "a")).valid is False


def test_a_put_overwrites_what_was_appended(history):
    rows = [(0, "invoke", "put", "a"), (0, "ok", "put", "a"), (0, "invoke", "append", "b"), (0, "ok", "append", "b"),
            (1, "invoke", "get", None), (1, "ok", "get", "ab"), (0, "invoke", "put", "c"), (0, "ok", "put", "c"),
            (0, "invoke", "append", "d"), (0, "ok", "append", "d"), (1, "invoke", "get", None)]
    assert kv(history, *rows, (1, "ok", "get", "cd")).valid is True
    stale = kv(history, *rows, (1, "ok", "get", "ab"))  # the put of "c" completed before this get began
    assert stale.valid is False and stale.witnesses[0]["op"] == 10
    assert stale.witnesses[0]["state"] == "cd" and "on key 'k'" in stale.witnesses[0]["explanation"]


def test_an_append_seen_without_the_put_that_completed_before_it(history):
    rows = [(0, "invoke", "put", "x"), (0, "ok", "put", "x"), (1, "invoke", "append", "y"), (1, "ok", "append", "y"),
            (2, "invoke", "get", None)]
    assert kv(history, *rows, (2, "ok", "get", "xy")).valid is True
    result = kv(history, *rows, (2, "ok", "get", "y"))
    assert result.valid is False and result.witnesses[0]["op"] == 4


def test_appends_in_real_time_order_cannot_be_seen_reversed(history):
    rows = [(0, "invoke", "append", "x"), (0, "ok", "append", "x"), (1, "invoke", "append", "y"),
            (1, "ok", "append", "y"), (2, "invoke", "get", None)]
    assert kv(history, *rows, (2, "ok", "get", "xy")).valid is True
    assert kv(history, *rows, (2, "ok", "get", "yx")).valid is False


def test_an_indeterminate_append_lands_anywhere_or_nowhere(history):
    rows = [(0, "invoke", "append", "a"), (0, "info", "append", "a"), (1, "invoke", "append", "b"),
            (1, "ok", "append", "b"), (1, "invoke", "append", "c"), (1, "ok", "append", "c"),
            (2, "invoke", "get", None)]
    for seen in ("bc", "bac", "abc", "bca"):
        assert kv(history, *rows, (2, "ok", "get", seen)).valid is True, seen
    assert kv(history, *rows, (2, "ok", "get", "cab")).valid is False


def test_values_are_strings_and_the_error_names_list_append(history):
    with pytest.raises(HistoryError, match="kv values are strings.*list-append"):
        kv(history, (0, "invoke", "append", 3), (0, "ok", "append", 3))
    with pytest.raises(HistoryError, match="kv values are strings"):
        kv(history, (0, "invoke", "get", None), (0, "ok", "get", ["a"]))


def test_porcupine_shaped_jepsen_ops_map_without_renaming():
    # Porcupine's kv logs name the key in `:key` and use get/put/append already
    ops = [{":process": 0, ":type": ":invoke", ":f": ":append", ":key": "1", ":value": "x"},
           {":process": 1, ":type": ":invoke", ":f": ":get", ":key": "1", ":value": None},
           {":process": 0, ":type": ":ok", ":f": ":append", ":key": "1", ":value": "x"},
           {":process": 1, ":type": ":ok", ":f": ":get", ":key": "1", ":value": ""}]
    mapped = from_jepsen_ops(ops, "kv")
    assert [(op["f"], op["key"], op["value"]) for op in mapped][:2] == [("append", "1", "x"), ("get", "1", None)]
    assert check(mapped, "kv").valid is True  # the get may precede the concurrent append
    mapped[3]["value"] = "xx"
    assert check(mapped, "kv").valid is False


def test_jepsen_independent_tuples_map_for_kv_too():
    ops = [{"process": 0, "type": "invoke", "f": "write", "value": ["k", "a"]},
           {"process": 0, "type": "ok", "f": "write", "value": ["k", "a"]},
           {"process": 0, "type": "invoke", "f": "append", "value": ["k", "b"]},
           {"process": 0, "type": "ok", "f": "append", "value": ["k", "b"]},
           {"process": 0, "type": "invoke", "f": "read", "value": ["k", None]},
           {"process": 0, "type": "ok", "f": "read", "value": ["k", "ab"]}]
    mapped = from_jepsen_ops(ops, "kv")
    assert [op["f"] for op in mapped[::2]] == ["put", "append", "get"] and {op["key"] for op in mapped} == {"k"}
    assert check(mapped, "kv").valid is True
    assert check(from_jepsen_ops(ops, "key-value"), "key-value").valid is True  # the alias
    assert check(mapped, "list-append").valid is False  # the same history read as lists: ["a", "b"] != "ab"
