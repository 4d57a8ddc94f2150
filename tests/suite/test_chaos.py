"""chaoskit.suite.chaos: how a chaos test's ChaosTest is composed (marker, then options, then the
call; the marker's seed wins) and what its claim says when it does not hold."""
from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.checkers.result import CheckResult
from chaoskit.checkers.verdict import Verdict
from chaoskit.run.chaostest import ChaosTest, RunResult
from chaoskit.suite.chaos import Chaos, ChaosFailure, RunOptions, expect_verdict

NODE = "suites/test_x.py::test_y[patched]"


def chaos(profile: str = "patched", **options) -> Chaos:
    marker = {"duration": 20, "workload": "keyed-sequences", "faults": {"f": 1}, "epic": "KIP-253", "client": "ordered"}
    return Chaos(profile, "y", NODE, marker, RunOptions(**{"seed": 7, "duration_s": None, "backend": "local", **options}))


def test_marker_then_options_then_call_and_labels_kept_apart():
    test = chaos(duration_s=8).test(client="librdkafka")
    assert (test.duration_s, test.seed, test.client, test.workload) == (8, 7, "librdkafka", "keyed-sequences")
    assert test.labels == {"epic": "KIP-253"} and test.profile == "patched" and test.name == "y"
    assert chaos().test().duration_s == 20  # no option: the marker's
    assert test.replay == ("pytest 'suites/test_x.py::test_y[patched]' --chaos-seed=7 --chaos-duration=8 "
                           "--chaos-backend=local --chaos-profile=patched")


def test_the_markers_seed_wins_over_the_sessions_and_a_calls_over_both():
    pinned = Chaos("patched", "y", NODE, {"seed": 5, "duration": 20}, RunOptions(seed=9, duration_s=8))
    assert (pinned.test().seed, pinned.test().duration_s) == (5, 8)  # the seed from code, the duration from options
    assert "--chaos-seed=5" in pinned.test().replay
    assert pinned.test(seed=11).seed == 11
    assert chaos().test().seed == 7  # no seed in the marker: the session's


def test_pick_follows_the_profile_and_a_bad_marker_keyword_is_named():
    assert chaos("unpatched").pick(patched="ordered", unpatched="kafka-python") == "kafka-python"
    bad = Chaos("patched", "y", NODE, {"durration": 5}, RunOptions(seed=7))
    with pytest.raises(TypeError, match="unknown keyword 'durration'"):
        bad.test()


def result(profile: str, **valid) -> RunResult:
    verdict = Verdict({name: CheckResult(name, v, {"anomalies": int(v is False)},
                                         [{"explanation": f"{name} witness"}] if v is False else [])
                       for name, v in valid.items()})
    test = ChaosTest("y", profile=profile, seed=7, replay="pytest x --chaos-seed=7")
    return RunResult(test, "r1", Path("/tmp/r1"), verdict, None, {"ops": 10, "acked": 4})


def test_patched_must_be_clean_and_the_message_names_the_anomaly_and_ends_with_the_replay():
    expect_verdict(result("patched", **{"lost-write": True, "key-order": True}), set())
    with pytest.raises(ChaosFailure) as failure:
        expect_verdict(result("patched", **{"lost-write": True, "key-order": False}), set())
    text = str(failure.value)
    assert text.startswith("anomaly key-order in the patched profile, which must check clean: key-order witness")
    lines = text.splitlines()
    assert lines[-3] == "to replay, add seed=7 to this test's @pytest.mark.chaos, or run either of:"
    assert lines[-2].startswith("replay: ") and lines[-2].endswith("chaoskit run /tmp/r1/test.json")
    assert lines[-1] == "replay: pytest x --chaos-seed=7"


def test_an_undecided_check_is_not_a_pass():
    with pytest.raises(ChaosFailure, match="verdict unknown: key-order could not decide"):
        expect_verdict(result("patched", **{"lost-write": True, "key-order": "unknown"}), set())


def test_unpatched_must_be_caught_with_every_expected_kind():
    expect_verdict(result("unpatched", **{"key-order": False, "duplicate": False}), {"key-order"})
    with pytest.raises(ChaosFailure, match="not caught: key-order expected in the unpatched profile, found duplicate"):
        expect_verdict(result("unpatched", **{"key-order": True, "duplicate": False}), {"key-order"})


def test_a_failed_scripted_step_fails_the_claim_in_either_profile():
    """A suite whose expansion or deletion was refused proved nothing, even with a clean verdict."""
    ok = result("patched", **{"unseen": True})
    ok.test.faults = {"scripted": [{"at": 0.3, "fault": "admin", "target": "client", "window_s": 0.5}]}
    expect_verdict(ok, set())
    ok.stats["fault_errors"] = [{"fault": "partition", "window": 0, "error": "NotReady: no leader"}]
    expect_verdict(ok, set())  # a random fault that could not start does not void the run
    ok.stats["fault_errors"].append({"fault": "admin", "window": 3, "error": "AdminError: INVALID_PARTITIONS"})
    with pytest.raises(ChaosFailure, match=r"scripted step admin \(window 3\) failed.*INVALID_PARTITIONS"):
        expect_verdict(ok, set())


def test_a_step_the_profile_must_refuse_must_fail():
    run = result("patched", **{"coordinator-split": True})
    run.test.faults = {"scripted": [{"at": 0.25, "fault": "admin", "target": "client", "window_s": 0.5}]}
    with pytest.raises(ChaosFailure, match="scripted step admin went through in the patched profile"):
        expect_verdict(run, set(), {"admin"})
    run.stats["fault_errors"] = [{"fault": "admin", "window": 0, "error": "AdminError: INVALID_REQUEST"}]
    expect_verdict(run, set(), {"admin"})


def test_a_claim_without_the_evidence_it_needs_is_unknown_in_either_profile():
    run = result("patched", **{"key-order": True})
    run.verdict.results["key-order"].counts.update(moved_pairs=2)
    expect_verdict(run, set(), evidence={"key-order": {"moved_pairs": 2}})
    with pytest.raises(ChaosFailure, match=r"verdict unknown: the run did not exercise what this claim needs "
                                           r"\(key-order moved_pairs 2 < 5\)"):
        expect_verdict(run, set(), evidence={"key-order": {"moved_pairs": 5}})
    caught = result("unpatched", **{"key-order": False})
    with pytest.raises(ChaosFailure, match=r"truncation-undetected did not run"):
        expect_verdict(caught, {"key-order"}, evidence={"truncation-undetected": {"replaced_reads": 1}})


def test_an_anomaly_in_a_profile_that_must_check_clean_fails_however_little_else_the_run_exercised():
    run = result("patched", **{"commit-regressed": False})
    run.verdict.results["commit-regressed"].counts.update(commit_pairs=14)
    with pytest.raises(ChaosFailure, match="anomaly commit-regressed in the patched profile, which must check clean"):
        expect_verdict(run, set(), evidence={"commit-regressed": {"commit_pairs": 20}})


def test_a_run_whose_checks_judged_nothing_is_unknown_not_clean():
    run = result("patched")
    run.verdict = Verdict({"lost-write": CheckResult.nothing_to_judge("lost-write", "no acknowledged write was ever read")})
    assert run.verdict.valid == "unknown"
    with pytest.raises(ChaosFailure, match="verdict unknown: no check had anything to judge"):
        expect_verdict(run, set())


def explored(run: RunResult, finding: dict | None = None) -> RunResult:
    run.stats["explore"] = {"folder": "/tmp/x", "runs": 9, "coverage": 120, "finding": finding}
    return run


def test_an_explored_claim_is_over_the_schedules_tried_not_one_run_s_evidence():
    c = chaos()
    c.marker["guarantee"] = None
    clean = explored(result("patched", **{"key-order": True}))
    c.expect(clean, evidence={"key-order": {"moved_pairs": 5}})  # the evidence of one run is not asked for
    caught = explored(result("unpatched", **{"unseen": False}), {"check": "unseen", "folder": "/tmp/x/f", "replays": [3, 3]})
    chaos("unpatched").expect(caught, unpatched={"key-order"})  # caught by what the search found first
    missed = explored(result("unpatched", **{"key-order": True}))
    with pytest.raises(ChaosFailure, match="not caught"):
        chaos("unpatched").expect(missed, unpatched={"key-order"})


def test_a_finding_whose_replay_checked_clean_still_fails_the_patched_claim():
    run = explored(result("patched", **{"key-order": True}), {"check": "key-order", "folder": "/tmp/x/f",
                                                               "replays": [2, 3]})
    with pytest.raises(ChaosFailure, match=r"explore found key-order in the patched profile .*/tmp/x/f"):
        chaos().expect(run)


def test_chaos_explore_searches_from_the_test_and_judges_one_run_of_its_finding(tmp_path, monkeypatch):
    """--chaos-explore: the search starts from this test; the run the claim judges replays the finding."""
    import json as _json
    from types import SimpleNamespace

    import chaoskit.explore.search as search
    import chaoskit.suite.chaos as chaos_module

    folder = tmp_path / "findings" / "key-order-abc"
    folder.mkdir(parents=True)
    (folder / "test.json").write_text(_json.dumps(ChaosTest("y-finding", seed=3, duration_s=5).to_json()))
    seen = {}

    class Explorer:
        def __init__(self, settings):
            seen["settings"] = settings

        def run(self):
            finding = SimpleNamespace(check="key-order", folder=folder, replays=(3, 3))
            return SimpleNamespace(runs=7, coverage=99, findings=[finding])

    def fake_run(test, progress=False, keep=False):
        seen["ran"] = test
        return RunResult(test, "r9", tmp_path, Verdict({"key-order": CheckResult("key-order", False, {"anomalies": 1})}),
                         None, {})

    monkeypatch.setattr(search, "Explorer", Explorer)
    monkeypatch.setattr(chaos_module, "run", fake_run)
    c = chaos(explore_s=90.0, reports=tmp_path)
    result = c.run()
    s = seen["settings"]
    assert (s.base.name, s.budget_s, s.seed, s.until) == ("y", 90.0, 7, "anomaly")
    assert seen["ran"].name == "y-finding" and seen["ran"].replay.endswith(f"chaoskit run {folder / 'test.json'}")
    assert result.stats["explore"]["finding"]["check"] == "key-order" and result.stats["explore"]["runs"] == 7
