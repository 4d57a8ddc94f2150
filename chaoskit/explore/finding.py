"""A finding's folder, as the search first writes it and the shrink rewrites it: test.json
(replayable with `chaoskit run`), the schedule as lines, the verdict with its witnesses, the replay
command, and the failing run's own folder."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from chaoskit.explore.files import write_atomically
from chaoskit.explore.steps import StepSchedule, to_test
from chaoskit.run.chaostest import TEST_FILE, ChaosTest, chaoskit_command


def broker_title(test: ChaosTest) -> str:
    """The broker a finding was found on, as its maintainers name it: "chaoskit", "tansu 0.6.0 over sqlite"."""
    from chaoskit.pluginmanager import broker_kind

    try:
        kind = broker_kind(test.broker)
    except ValueError:
        return test.broker
    return f"{kind.title} over {test.broker_storage}" if test.broker_storage else kind.title


def write_finding(folder: Path, base: ChaosTest, schedule: StepSchedule, seed: int, results: dict[str, Any],
                  check: str, stage: str, replays: tuple[int, int] | None = None, run_dir: Path | None = None,
                  duration_s: float | None = None) -> None:
    """A finding's folder: test.json (replayable), schedule.txt, verdict.json, replay.txt and run/ (the
    failing run's folder, which the witnesses' op numbers refer to). As first found, all of it also
    goes to found/."""
    test = to_test(base, schedule, f"{base.name}-finding", seed, reports=base.reports,
                   duration_s=duration_s or base.duration_s)
    how = f"failed in {replays[0]} of {replays[1]} replays" if replays else "as found (not yet replayed)"
    broker = broker_title(test)
    verdict = results.get("verdict") or {}
    files = {TEST_FILE: json.dumps(test.to_json(), indent=1) + "\n",
             "schedule.txt": "\n".join(schedule.lines()) + "\n",
             "verdict.json": json.dumps({"check": check, "stage": stage, "valid": results.get("valid"), "broker": broker,
                                         "witnesses": (verdict.get("results") or {}).get(check, {}),
                                         "verdict": verdict}, indent=1) + "\n",
             "replay.txt": f"{chaoskit_command()} run {folder / TEST_FILE}\n# {stage}: {len(schedule.steps)} steps, {how}; the "
                           f"failing run's history, logs and results are in run/\n# broker: {broker}, client: {test.client}\n"}
    for d in [folder] + ([folder / "found"] if stage == "found" else []):
        for name, text in files.items():
            write_atomically(d / name, text)
    if run_dir is not None and Path(run_dir).is_dir():  # a found run is copied (it may hold other findings too)
        shutil.rmtree(folder / "run", ignore_errors=True)
        if stage == "found":
            for d in (folder, folder / "found"):
                shutil.copytree(run_dir, d / "run")
        else:
            shutil.move(str(run_dir), folder / "run")
