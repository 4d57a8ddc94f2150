"""The cas-register model on hand-built histories with known verdicts: sequential and concurrent
ops, concurrent cas, real-time violations, indeterminate (info) and failed ops."""
from __future__ import annotations

import pytest

from chaoskit.checkers.linear import check

W, R, C = "write", "read", "cas"


def verdict(ops):
    return check(ops, "cas-register").valid


def test_sequential_write_then_read_is_linearizable(history):
    assert verdict(history((0, "invoke", W, 1), (0, "ok", W, 1), (1, "invoke", R, None), (1, "ok", R, 1))) is True


def test_reading_a_value_never_written_is_not(history):
    result = check(history((0, "invoke", W, 1), (0, "ok", W, 1), (1, "invoke", R, None), (1, "ok", R, 7)),
                   "cas-register")
    assert result.valid is False
    assert result.witnesses[0]["op"] == 2 and result.witnesses[0]["completion"] == 3
    assert result.witnesses[0]["prefix"] == [0]
    assert "op 2" in result.witnesses[0]["explanation"] and "read returned 7" in result.witnesses[0]["explanation"]


@pytest.mark.parametrize("seen", [None, 1])
def test_a_read_concurrent_with_a_write_may_see_either_value(history, seen):
    ops = history((0, "invoke", W, 1), (1, "invoke", R, None), (1, "ok", R, seen), (0, "ok", W, 1))
    assert verdict(ops) is True


def test_real_time_violation_read_misses_a_completed_write(history):
    # the write completed before the read began, so the read must see it
    ops = history((0, "invoke", W, 1), (0, "ok", W, 1), (1, "invoke", R, None), (1, "ok", R, None))
    assert verdict(ops) is False


def test_real_time_violation_read_sees_a_write_from_the_future(history):
    ops = history((1, "invoke", R, None), (1, "ok", R, 1), (0, "invoke", W, 1), (0, "ok", W, 1))
    assert verdict(ops) is False


def test_reads_cannot_go_back_in_time(history):
    # concurrent with the write, the first read sees it; a later read then cannot see the old value
    ops = history((0, "invoke", W, 1), (1, "invoke", R, None), (1, "ok", R, 1), (2, "invoke", R, None),
                  (2, "ok", R, None), (0, "ok", W, 1))
    assert verdict(ops) is False


def test_concurrent_cas_from_the_same_value_cannot_both_succeed(history):
    ops = history((0, "invoke", W, 0), (0, "ok", W, 0), (1, "invoke", C, [0, 1]), (2, "invoke", C, [0, 2]),
                  (1, "ok", C, [0, 1]), (2, "ok", C, [0, 2]))
    assert verdict(ops) is False


def test_concurrent_cas_chain_is_ordered_by_values(history):
    base = [(0, "invoke", W, 0), (0, "ok", W, 0), (1, "invoke", C, [1, 2]), (2, "invoke", C, [0, 1]),
            (1, "ok", C, [1, 2]), (2, "ok", C, [0, 1]), (3, "invoke", R, None)]
    assert verdict(history(*base, (3, "ok", R, 2))) is True
    assert verdict(history(*base, (3, "ok", R, 1))) is False


def test_failed_ops_did_not_happen(history):
    base = [(0, "invoke", W, 3), (0, "fail", W, 3), (1, "invoke", R, None)]
    assert verdict(history(*base, (1, "ok", R, None))) is True
    assert verdict(history(*base, (1, "ok", R, 3))) is False


def test_failed_cas_leaves_the_register_alone(history):
    ops = history((0, "invoke", W, 0), (0, "ok", W, 0), (1, "invoke", C, [5, 6]), (1, "fail", C, [5, 6]),
                  (2, "invoke", R, None), (2, "ok", R, 0))
    assert verdict(ops) is True


@pytest.mark.parametrize("seen", [None, 1])
def test_an_info_write_may_have_happened_or_not(history, seen):
    ops = history((0, "invoke", W, 1), (0, "info", W, 1), (1, "invoke", R, None), (1, "ok", R, seen))
    assert verdict(ops) is True


def test_an_info_write_takes_effect_once_and_stays(history):
    ops = history((0, "invoke", W, 1), (0, "info", W, 1), (1, "invoke", R, None), (1, "ok", R, 1),
                  (1, "invoke", R, None), (1, "ok", R, None))
    assert verdict(ops) is False


def test_an_info_write_may_take_effect_long_after_it_timed_out(history):
    ops = history((0, "invoke", W, 1), (0, "info", W, 1), (1, "invoke", R, None), (1, "ok", R, None),
                  (1, "invoke", R, None), (1, "ok", R, None), (2, "invoke", R, None), (2, "ok", R, 1))
    assert verdict(ops) is True


def test_an_info_write_cannot_take_effect_before_its_invoke(history):
    ops = history((1, "invoke", R, None), (1, "ok", R, 1), (0, "invoke", W, 1), (0, "info", W, 1))
    assert verdict(ops) is False


def test_an_info_cas_takes_effect_only_from_its_old_value(history):
    base = [(0, "invoke", W, 0), (0, "ok", W, 0), (1, "invoke", C, [0, 5]), (1, "info", C, [0, 5])]
    assert verdict(history(*base, (2, "invoke", R, None), (2, "ok", R, 5))) is True
    # once 9 is written the cas from 0 cannot apply, and before it 9 would overwrite the 5
    later_write = [(2, "invoke", W, 9), (2, "ok", W, 9), (3, "invoke", R, None)]
    assert verdict(history(*base, *later_write, (3, "ok", R, 5))) is False
    assert verdict(history(*base, *later_write, (3, "ok", R, 9))) is True


def test_an_invoke_that_never_completed_is_indeterminate(history):
    ops = history((0, "invoke", W, 1), (1, "invoke", R, None), (1, "ok", R, 1))
    result = check(ops, "cas-register")
    assert result.valid is True and result.counts["indeterminate"] == 1


def test_a_history_without_model_ops_checks_nothing_and_says_so():
    result = check([{"index": 0, "process": 0, "type": "ok", "f": "assigned", "value": [0]}], "kafka")
    assert result.valid == "unknown" and result.name == "linearizable"
    assert "nothing was checked" in result.error


def test_the_witness_prefix_is_the_longest_linearizable_order(history):
    ops = history((0, "invoke", W, 1), (0, "ok", W, 1), (0, "invoke", W, 2), (0, "ok", W, 2),
                  (1, "invoke", R, None), (1, "ok", R, 2), (1, "invoke", R, None), (1, "ok", R, 1))
    witness = check(ops, "cas-register").witnesses[0]
    assert witness["prefix"] == [0, 2, 4] and witness["op"] == 6 and witness["state"] == 2


def test_independent_registers_are_split_by_key(history):
    ops = history((0, "invoke", W, 1, "a"), (0, "ok", W, 1, "a"), (1, "invoke", R, None, "b"), (1, "ok", R, None, "b"))
    result = check(ops, "cas-register")
    assert result.valid is True and result.counts["sub-histories"] == 2


def test_history_order_follows_index_not_list_order(history):
    ops = history((0, "invoke", W, 1), (0, "ok", W, 1), (1, "invoke", R, None), (1, "ok", R, None))
    assert verdict(list(reversed(ops))) is False
