"""The search loop (chaoskit.explore.search) on its own: the runs come from a stand-in pool that
answers with a recorded run's folder, marked failing when the schedule holds a kill of the
coordinator (a unit test of the loop; tests/explore/test_explore_live.py runs real clusters)."""
from __future__ import annotations

import json
import shutil
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import pytest

from chaoskit.explore.corpus import Corpus
from chaoskit.explore.search import Explorer, Settings, parse_budget
from chaoskit.run.chaostest import ChaosTest, Topic


class RecordedPool:
    """Answers every test with a copy of a recorded run; it failed (key-order) when it killed the coordinator."""

    runs: list[ChaosTest] = []

    def __init__(self, source: Path) -> None:
        self.source, self.jobs = source, 1

    def __call__(self, root: Path, jobs: int) -> RecordedPool:
        self.root = root
        return self

    def submit(self, test: ChaosTest) -> Future:
        RecordedPool.runs.append(test)
        run_dir = self.root / "runs" / test.name
        shutil.copytree(self.source, run_dir)
        (run_dir / "test.json").write_text(json.dumps(test.to_json()))
        results = json.loads((run_dir / "results.json").read_text())
        if any(s["fault"] == "kill" and s["target"] == "coordinator" for s in (test.faults or {}).get("scripted", [])):
            results["valid"] = False
            results["verdict"]["results"]["key-order"]["valid"] = False
        (run_dir / "results.json").write_text(json.dumps(results))
        future: Future = Future()
        future.set_result({"run_dir": str(run_dir), "seconds": 1.0})
        return future

    def close(self) -> None:
        pass


def settings(tmp_path: Path, **changes) -> Settings:
    kill = {"at_s": 3.0, "fault": "kill", "target": "coordinator", "window_s": 1.0, "params": {}, "pick": 1}
    expand = {"at_s": 1.0, "fault": "admin", "target": "client", "window_s": 0.5,
              "params": {"op": "expand", "topic": "orders", "to": 6}, "pick": 2}
    base = ChaosTest("xp", duration_s=10, client="ordered", topics=[Topic("orders", 4)],
                     faults={"mean_interval_s": 60, "window_s": [1, 1], "faults": {}, "scripted": [expand, kill]})
    return Settings(**{"base": base, "out": tmp_path / "x", "seed": 4, "budget_s": 60, "shrink_budget_s": 60,
                       "faults": ["admin", "kill", "latency"], **changes})


@pytest.fixture
def pool(recorded) -> RecordedPool:
    RecordedPool.runs = []
    return RecordedPool(recorded("rec-gates"))


def test_the_search_starts_from_the_base_s_story_stops_at_its_finding_and_shrinks_it(tmp_path, pool):
    said: list[str] = []
    result = Explorer(settings(tmp_path), said.append, pool=pool).run()
    assert result.runs == 1 and [f.check for f in result.findings] == ["key-order"]
    finding = result.findings[0]
    assert [s.fault for s in finding.shrunk.steps] == ["kill"] and finding.replays == (3, 3)
    folder = finding.folder
    assert (folder / "schedule.txt").read_text().splitlines()[-1].endswith("kill coordinator for 0.5 s")
    replayed = ChaosTest.from_json(json.loads((folder / "test.json").read_text()))
    assert replayed.topics[0].name == "orders" and [s["fault"] for s in replayed.faults["scripted"]] == ["kill"]
    assert "chaoskit run" in (folder / "replay.txt").read_text() and (folder / "run" / "history.jsonl").exists()
    assert json.loads((folder / "verdict.json").read_text())["check"] == "key-order"
    assert (folder / "found" / "test.json").exists() and len(json.loads((folder / "found" / "test.json").read_text())[
        "faults"]["scripted"]) == 2
    assert any("FINDING key-order" in line for line in said)


def test_a_whole_budget_search_keeps_going_past_findings_and_can_resume(tmp_path, pool):
    s = settings(tmp_path, until="budget", budget_s=1e9, shrink=False)
    explorer = Explorer(s, lambda _: None, pool=pool)
    explorer._spent = lambda: 1e10 if explorer.corpus.runs >= 6 else 0.0  # six runs' worth of budget
    first = explorer.run()
    assert first.runs == 6 and [f.check for f in first.findings] == ["key-order"]
    resumed = Explorer(s, lambda _: None, pool=pool, resume=True)
    resumed._spent = lambda: 1e10 if resumed.corpus.runs >= 9 else 0.0
    assert resumed.run().runs == 9
    names = [t.name for t in RecordedPool.runs[-3:]]
    assert names == ["xp-x6", "xp-x7", "xp-x8"]  # numbering carries on
    assert Corpus.open(tmp_path / "x").runs == 9


def test_the_random_strategy_draws_every_schedule_afresh(tmp_path, pool):
    s = settings(tmp_path, strategy="random", until="budget", shrink=False)
    explorer = Explorer(s, lambda _: None, pool=pool)
    explorer._spent = lambda: 1e10 if explorer.corpus.runs >= 4 else 0.0
    explorer.run()
    lines = [json.loads(x) for x in (tmp_path / "x" / "runs.jsonl").read_text().splitlines()]
    assert [x["parent"] for x in lines] == ["fresh"] * 4


def test_budgets_read_as_people_write_them():
    assert [parse_budget(b) for b in ("90", "90s", "10m", "1h", "1h30m", "2m30s")] == [90, 90, 600, 3600, 5400, 150]
    with pytest.raises(ValueError, match="like 90s"):
        parse_budget("ten minutes")


class MutantPool(RecordedPool):
    """Fails (key-order) a run that kills the coordinator; with `only_mutated`, only with a mutation on."""

    only_mutated = False

    def submit(self, test: ChaosTest) -> Future:
        future = super().submit(test)
        if self.only_mutated and not test.mutations:
            run_dir = Path(future.result()["run_dir"])
            results = json.loads((run_dir / "results.json").read_text())
            results["valid"] = True
            results["verdict"]["results"]["key-order"]["valid"] = True
            (run_dir / "results.json").write_text(json.dumps(results))
        return future


@pytest.mark.parametrize("only_mutated", [True, False])
def test_with_a_mutation_a_finding_is_its_catch_only_if_the_system_without_it_does_not_show_it(tmp_path, recorded,
                                                                                              only_mutated):
    RecordedPool.runs = []
    pool = MutantPool(recorded("rec-gates"))
    pool.only_mutated = only_mutated
    s = settings(tmp_path, shrink=False, until="anomaly")
    s.base = replace(s.base, mutations=["linear-hashing"])
    explorer = Explorer(s, lambda _: None, pool=pool)
    explorer._spent = lambda: 1e10 if explorer.corpus.runs >= 3 else 0.0
    result = explorer.run()
    controls = [t for t in RecordedPool.runs if not t.mutations]
    if only_mutated:  # the mutation's catch: the search stops at it
        assert [f.check for f in result.findings] == ["key-order"] and not result.unmutated
        assert result.runs == 1 and len(controls) == 2
    else:  # the system's own anomaly: kept apart, and the search goes on
        assert not result.findings and [f.check for f in result.unmutated] == ["key-order"]
        assert result.runs == 3 and result.unmutated[0].folder.exists()


class OnceOnlyPool(RecordedPool):
    """Fails (key-order) only the first run that kills the coordinator, never a replay of it."""

    def submit(self, test: ChaosTest) -> Future:
        future = super().submit(test)
        if test.name != "xp-x0":
            run_dir = Path(future.result()["run_dir"])
            results = json.loads((run_dir / "results.json").read_text())
            results["valid"] = True
            results["verdict"]["results"]["key-order"]["valid"] = True
            (run_dir / "results.json").write_text(json.dumps(results))
        return future


def test_a_finding_its_replays_do_not_bear_out_is_kept_as_flaky_and_the_search_goes_on(tmp_path, recorded):
    RecordedPool.runs = []
    explorer = Explorer(settings(tmp_path), lambda _: None, pool=OnceOnlyPool(recorded("rec-gates")))
    explorer._spent = lambda: 1e10 if explorer.corpus.runs >= 3 else 0.0
    result = explorer.run()
    assert not result.findings and [f.check for f in result.flaky] == ["key-order"]
    assert result.flaky[0].replays == (0, 3) and result.runs == 3  # it searched on past run 0
    assert "0 of 3 replays" in (result.flaky[0].folder / "replay.txt").read_text()
