"""The list-append model (get, put, append on lists; one sub-history per key) on hand-built
histories, and Jepsen-named histories mapped by from_jepsen_ops giving the verdicts of their
native twins."""
from __future__ import annotations

import pytest

from chaoskit.checkers.linear import check
from chaoskit.checkers.linear.models import HistoryError
from chaoskit.history.jepsen import from_jepsen_ops
from chaoskit.history.schema import SchemaError


def verdict(ops):
    return check(ops, "list-append").valid


def test_keys_are_independent(history):
    ops = history((0, "invoke", "put", 1, "x"), (0, "ok", "put", 1, "x"),
                  (1, "invoke", "get", None, "y"), (1, "ok", "get", None, "y"),
                  (1, "invoke", "get", None, "x"), (1, "ok", "get", 1, "x"))
    result = check(ops, "list-append")
    assert result.valid is True and result.counts["sub-histories"] == 2


def test_a_stale_get_on_one_key_is_caught_and_named(history):
    ops = history((0, "invoke", "put", 1, "x"), (0, "ok", "put", 1, "x"),
                  (0, "invoke", "put", 2, "x"), (0, "ok", "put", 2, "x"),
                  (1, "invoke", "put", 5, "y"), (1, "ok", "put", 5, "y"),
                  (1, "invoke", "get", None, "x"), (1, "ok", "get", 1, "x"))
    result = check(ops, "list-append")
    assert result.valid is False and result.counts["invalid"] == 1
    assert result.witnesses[0]["key"] == "x" and result.witnesses[0]["op"] == 6
    assert "on key 'x'" in result.witnesses[0]["explanation"]


def test_appends_build_a_list_in_linearization_order(history):
    base = [(0, "invoke", "append", "a", "k"), (1, "invoke", "append", "b", "k"),
            (0, "ok", "append", "a", "k"), (1, "ok", "append", "b", "k"), (2, "invoke", "get", None, "k")]
    assert verdict(history(*base, (2, "ok", "get", ["b", "a"], "k"))) is True
    assert verdict(history(*base, (2, "ok", "get", ["a", "b"], "k"))) is True
    assert verdict(history(*base, (2, "ok", "get", ["a"], "k"))) is False  # a lost append


def test_append_after_put_extends_the_put_value(history):
    ops = history((0, "invoke", "put", 7, "k"), (0, "ok", "put", 7, "k"), (0, "invoke", "append", 8, "k"),
                  (0, "ok", "append", 8, "k"), (1, "invoke", "get", None, "k"), (1, "ok", "get", [7, 8], "k"))
    assert verdict(ops) is True


def test_an_info_append_may_land_between_later_appends(history):
    ops = history((0, "invoke", "append", "a", "k"), (0, "info", "append", "a", "k"),
                  (1, "invoke", "append", "b", "k"), (1, "ok", "append", "b", "k"),
                  (1, "invoke", "append", "c", "k"), (1, "ok", "append", "c", "k"),
                  (2, "invoke", "get", None, "k"), (2, "ok", "get", ["b", "a", "c"], "k"))
    assert verdict(ops) is True


def test_list_append_ops_need_a_key(history):
    with pytest.raises(HistoryError, match="key"):
        check(history((0, "invoke", "put", 1), (0, "ok", "put", 1)), "list-append")


JEPSEN_REGISTER = [
    {":process": 0, ":type": ":invoke", ":f": ":write", ":value": 3},
    {":process": 1, ":type": ":invoke", ":f": ":cas", ":value": [3, 4]},
    {":process": 0, ":type": ":ok", ":f": ":write", ":value": 3},
    {":process": 1, ":type": ":ok", ":f": ":cas", ":value": [3, 4]},
    {":process": 0, ":type": ":invoke", ":f": ":read", ":value": None},
    {":process": 0, ":type": ":ok", ":f": ":read", ":value": 4},
]


@pytest.mark.parametrize("last_read,expected", [(4, True), (3, False)])
def test_jepsen_register_ops_check_like_native_ones(history, last_read, expected):
    jepsen = [dict(op) for op in JEPSEN_REGISTER]
    jepsen[-1][":value"] = last_read
    native = history((0, "invoke", "write", 3), (1, "invoke", "cas", [3, 4]), (0, "ok", "write", 3),
                     (1, "ok", "cas", [3, 4]), (0, "invoke", "read", None), (0, "ok", "read", last_read))
    mapped = from_jepsen_ops(jepsen, "cas-register")
    assert check(mapped, "cas-register").valid is check(native, "cas-register").valid is expected


@pytest.mark.parametrize("seen,expected", [(["x", "y"], True), (["y"], False)])
def test_jepsen_independent_list_ops_map_to_keys(history, seen, expected):
    jepsen = [
        {"process": 0, "type": "invoke", "f": "append", "value": ["k1", "x"]},
        {"process": 0, "type": "ok", "f": "append", "value": ["k1", "x"]},
        {"process": 1, "type": "invoke", "f": "write", "value": ["k2", 9]},
        {"process": 1, "type": "info", "f": "write", "value": ["k2", 9]},
        {"process": 0, "type": "invoke", "f": "append", "value": ["k1", "y"]},
        {"process": 0, "type": "ok", "f": "append", "value": ["k1", "y"]},
        {"process": 2, "type": "invoke", "f": "read", "value": ["k1", None]},
        {"process": 2, "type": "ok", "f": "read", "value": ["k1", seen]},
        {"process": "nemesis", "type": "info", "f": "start", "value": None},
    ]
    mapped = from_jepsen_ops(jepsen, "list-append")
    assert [op["f"] for op in mapped[:4]] == ["append", "append", "put", "put"] and mapped[7]["key"] == "k1"
    native = history((0, "invoke", "append", "x", "k1"), (0, "ok", "append", "x", "k1"),
                     (1, "invoke", "put", 9, "k2"), (1, "info", "put", 9, "k2"),
                     (0, "invoke", "append", "y", "k1"), (0, "ok", "append", "y", "k1"),
                     (2, "invoke", "get", None, "k1"), (2, "ok", "get", seen, "k1"))
    assert check(mapped, "list-append").valid is check(native, "list-append").valid is expected


def test_jepsen_independent_value_must_be_a_pair():
    with pytest.raises(SchemaError, match=r"\[key value\]"):
        from_jepsen_ops([{"process": 0, "type": "invoke", "f": "read", "value": 3}], "list-append")
