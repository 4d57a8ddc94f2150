"""`chaoskit mutate` (chaoskit.suite.mutate): the plan of runs, the table and its gaps, and, in CI,
one mutation per suite with one seed: each suite catches the element it exists for."""
from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.protocol.mutations import MUTATIONS
from chaoskit.suite.mutate import gaps, markdown, plan, run_one, summary

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "suites"
# each suite's own: the element whose absence it exists to catch (docs/verdicts.md has the full table)
# KAFKA-20029's in CI (the shortest); the others nightly, so that CI stays under 30 minutes (each
# suite's unpatched side shows in CI that it catches a broker without its proposal, and explore's CI
# test catches linear-hashing)
NIGHTLY = pytest.mark.nightly
PAIRS = [pytest.param("linear-hashing", "kip253_expansion", marks=NIGHTLY),
         pytest.param("deletion-gate", "kip253_deletion", marks=NIGHTLY),
         pytest.param("truncation-detection", "kip320_truncation", marks=NIGHTLY),
         pytest.param("fetch-epoch-fencing", "kip320_zombie", marks=NIGHTLY),
         # the reduction suite's unpatched side (KIP-694's immediate removal) already shows in CI
         # what removing the delay does
         pytest.param("delayed-deletion", "kip694_reduction", marks=NIGHTLY),
         ("guardrail", "internal_topic_guardrail")]
CI_SEED = 7


def test_the_plan_runs_each_mutation_against_its_own_suites_unless_asked_for_all():
    pairs = plan(list(MUTATIONS), None, False, SUITES)
    assert {(m, s) for m, s in pairs} == {(m.name, s) for m in MUTATIONS.values() for s in m.suites}
    assert plan(["guardrail"], ["kip253_expansion"], True, SUITES) == [("guardrail", "kip253_expansion")]
    with pytest.raises(ValueError, match="unknown: nope"):
        plan(["nope"], None, False, SUITES)


def test_a_mutation_no_suite_catches_in_95_percent_of_seeds_is_a_gap():
    def runs(*outcomes):
        return summary([{"seed": s, "outcome": o, "runs": []} for s, o in zip((1, 2, 3), outcomes)])

    table = {"seeds": [1, 2, 3], "goal": 0.95, "mutations": {
        "a": {"proposal": "KIP-253", "suites": {"x": runs("caught", "missed", "caught"),
                                                 "y": runs("missed", "caught", "unknown")}},
        "b": {"proposal": "KIP-320", "suites": {"x": runs("caught", "caught", "missed")}}}}
    assert gaps(table) == ["b"]  # a: caught by one suite or the other in every seed
    assert "| a | KIP-253 | x | 2 of 3 | 1 | 0 |" in markdown(table) and "gaps (caught in under 95% of seeds): b" \
        in markdown(table)


@pytest.mark.parametrize("mutation,suite", PAIRS,
                         ids=[f"{s}-{m}" for m, s in (getattr(p, "values", p) for p in PAIRS)])
def test_each_suite_catches_its_own_mutation(mutation, suite, tmp_path):
    one = run_one(mutation, suite, CI_SEED, tmp_path, SUITES)
    assert one["outcome"] == "caught", (f"{suite} did not catch {mutation} (seed {CI_SEED}): {one}; "
                                        f"log: {Path(one['log']).read_text()[-3000:]}")


def test_nightly_runs_a_suite_s_nightly_cases_as_well_as_its_ci_ones(tmp_path, monkeypatch):
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "test_toy.py").write_text(
        "import pytest\n"
        "@pytest.mark.chaos\n"
        "def test_ci(): open('ci.ran', 'w').close()\n"
        "@pytest.mark.chaos\n@pytest.mark.nightly\n"
        "def test_story(): open('nightly.ran', 'w').close()\n")
    monkeypatch.chdir(tmp_path)  # the toy tests leave their marks here
    run_one("guardrail", "toy", 1, tmp_path / "smoke", suites)
    assert Path("ci.ran").exists() and not Path("nightly.ran").exists()
    run_one("guardrail", "toy", 1, tmp_path / "both", suites, nightly=True)
    assert Path("nightly.ran").exists()
