"""CheckResult and merge_valid: the three-valued verdict and its JSON."""
import pytest

from chaoskit.checkers.result import MAX_WITNESSES, UNKNOWN, CheckResult, merge_valid


@pytest.mark.parametrize("verdicts,overall", [
    ([True, True], True),
    ([True, UNKNOWN], UNKNOWN),
    ([UNKNOWN, False, True], False),
    ([], UNKNOWN),
])
def test_false_beats_unknown_beats_true(verdicts, overall):
    assert merge_valid(verdicts) == overall


def test_a_raised_check_is_unknown_with_its_error_and_round_trips():
    r = CheckResult.unknown("duplicate", ValueError("bad column"))
    assert r.valid == UNKNOWN and r.error == "ValueError: bad column"
    assert CheckResult.from_json(r.to_json()) == r


def test_witnesses_are_capped_and_bad_verdicts_refused():
    r = CheckResult("lost-write", False, {"lost": 50}, [{"explanation": str(i)} for i in range(50)])
    assert len(r.witnesses) == MAX_WITNESSES
    with pytest.raises(ValueError):
        CheckResult("x", "maybe")  # type: ignore[arg-type]


def test_one_vocabulary_with_what_the_verdict_rests_on():
    from chaoskit.checkers.verdict import Verdict

    clean, found = CheckResult("lost-write", True), CheckResult("key-order", False)
    idle = CheckResult.nothing_to_judge("truncation-undetected", "no truncation")
    assert [r.word for r in (clean, found, idle, CheckResult.unknown("x", "why"))] == [
        "clean", "anomaly", "not exercised", "unknown"]
    v = Verdict({"lost-write": clean, "truncation-undetected": idle})
    assert (v.word, v.tally) == ("clean", "1 check judged, 1 not exercised")
    v = Verdict({"lost-write": clean, "key-order": found, "truncation-undetected": idle})
    assert (v.word, v.tally) == ("anomaly", "key-order found an anomaly; 1 check judged clean, 1 not exercised")
    assert v.to_json()["verdict"] == "anomaly" and v.to_json()["tally"] == v.tally
