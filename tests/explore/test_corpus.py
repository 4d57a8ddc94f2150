"""The explore's folder (chaoskit.explore.corpus): written as runs arrive, read back to resume."""
from __future__ import annotations

import pytest

from chaoskit.explore.corpus import Corpus
from chaoskit.explore.steps import Step, StepSchedule

A = StepSchedule((Step("kill", 1.0, 1.0, "random-broker"),))
B = StepSchedule((Step("pause", 2.0, 1.0, "random-broker"),))


def test_a_run_that_reaches_something_new_is_kept_and_one_that_does_not_is_only_logged(tmp_path):
    c = Corpus.open(tmp_path / "x", {"seed": 1})
    assert c.note({"n": 0}, A, frozenset({"a", "b"})) == ["a", "b"]
    assert c.note({"n": 1}, B, frozenset({"a"})) == []
    assert list(c.entries) == [A.digest] and c.coverage == 2 and c.hits == {"a": 2, "b": 1}
    assert c.rarity(c.entries[A.digest]) == pytest.approx(0.5 + 1.0)


def test_an_explore_reads_back_from_its_folder_even_with_a_line_cut_short(tmp_path):
    c = Corpus.open(tmp_path / "x", {"seed": 1})
    c.note({"n": 0, "at_s": 10.0, "findings": []}, A, frozenset({"a"}))
    c.note({"n": 1, "at_s": 22.0, "findings": ["key-order"]}, B, frozenset({"a", "c"}))
    with (tmp_path / "x" / "runs.jsonl").open("a") as f:
        f.write('{"n": 2, "at_s"')  # killed mid-line
    back = Corpus.open(tmp_path / "x")
    assert back.runs == 2 and back.coverage == 2 and set(back.entries) == {A.digest, B.digest}
    assert back.findings == {"key-order": f"key-order-{B.digest}"} and back.timeline[-1] == (22.0, 2, 2)
    assert back.settings == {"seed": 1}


def test_a_folder_is_not_started_twice_nor_resumed_when_it_holds_no_explore(tmp_path):
    Corpus.open(tmp_path / "x", {"seed": 1})
    with pytest.raises(FileExistsError, match="--resume"):
        Corpus.open(tmp_path / "x", {"seed": 2})
    with pytest.raises(FileNotFoundError, match="no explore"):
        Corpus.open(tmp_path / "y")
