"""A chaos run in the Allure report: steps, labels, links and attachments of one RunResult.

allure-pytest writes results only when `--alluredir` is set (the pytest plugin sets it to
<reports>/allure-results by default); without it these calls are no-ops, so suites run the same
either way. Steps are written after the run from its history and timings: Allure steps belong
to the test's thread, and a run's faults happen on the nemesis thread.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from chaoskit.checkers.situate import witness_text

# the proposals' text, linked from each test's report
PROPOSALS = {
    "KIP-253": "https://cwiki.apache.org/confluence/display/KAFKA/KIP-253%3A+Support+in-order+message+delivery+with+partition+expansion",
    "KIP-320": "https://cwiki.apache.org/confluence/display/KAFKA/KIP-320%3A+Allow+fetchers+to+detect+and+handle+log+truncation",
    "KIP-694": "https://cwiki.apache.org/confluence/display/KAFKA/KIP-694%3A+Support+Reducing+Partitions+for+Topics",
    "KAFKA-20029": "https://issues.apache.org/jira/browse/KAFKA-20029",
}
NODE_LOG_TAIL = 200_000  # bytes of each node's log attached to a failed test


def categories() -> list[dict[str, Any]]:
    """Allure's categories.json from the check catalog: a failing check's name in the message puts
    the test in that check's category (chaoskit.checkers.catalog says which)."""
    from chaoskit.checkers.catalog import CHECKS

    by_category: dict[str, list[str]] = {}
    for check in CHECKS.values():
        by_category.setdefault(check.category, []).append(check.name)
    out = [{"name": name, "matchedStatuses": ["failed"],
            "messageRegex": "(?s).*anomaly (" + "|".join(sorted(checks)) + ")\\b.*"}
           for name, checks in sorted(by_category.items())]
    out.append({"name": "Known-broken system not caught", "matchedStatuses": ["failed"],
                "messageRegex": "(?s).*not caught: .*"})
    out.append({"name": "Run broke (no verdict)", "matchedStatuses": ["failed", "broken"],
                "messageRegex": "(?s).*(run broke|verdict unknown).*"})
    return out


def write_results_files(results_dir: Path, environment: dict[str, str]) -> None:
    """categories.json and environment.properties beside the result files."""
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "categories.json").write_text(json.dumps(categories(), indent=1) + "\n")
    lines = [f"{k}={_property(v)}" for k, v in sorted(environment.items())]
    (results_dir / "environment.properties").write_text("\n".join(lines) + "\n")


def _property(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", " ")


def label_test(labels: dict[str, str]) -> None:
    """epic (the proposal), feature (the fault mix), severity, and the proposal's link."""
    import allure

    epic = labels.get("epic")
    if epic:
        allure.dynamic.epic(epic)
        for name, url in PROPOSALS.items():
            if name in epic:
                allure.dynamic.link(url, name=f"{name} text")
    if labels.get("feature"):
        allure.dynamic.feature(labels["feature"])
    if labels.get("story"):
        allure.dynamic.story(labels["story"])
    allure.dynamic.severity(getattr(allure.severity_level, labels.get("severity", "critical").upper()))


def report_run(result: Any, plots: Iterable[Path] = ()) -> None:
    """Steps and attachments of one run (a RunResult)."""
    import allure

    from chaoskit.history.availability import describe

    stats, test = result.stats, result.test
    allure.dynamic.parameter("profile", test.profile)
    allure.dynamic.parameter("seed", test.seed)
    with allure.step(f"cluster up: {test.brokers} brokers, {test.controllers} controllers, {test.profile} profile "
                     f"({stats.get('cluster_up_s', '?')} s)"):
        pass
    with allure.step(f"workload {test.workload} with {test.client} clients for {test.duration_s:g} s: "
                     f"{stats.get('ops', 0)} ops, {stats.get('acked', 0)} acknowledged"):
        for line in fault_lines(result.history):
            with allure.step(line):
                pass
    with allure.step(f"heal and drain: every fault healed, "
                     f"{'all acknowledged writes read back' if stats.get('drained') else 'drain timed out'}"):
        if stats.get("nemesis_error"):
            with allure.step(f"nemesis error: {stats['nemesis_error']}"):
                pass
    with allure.step(f"availability: {describe(stats['availability'])}" if stats.get("availability")
                     else "availability: not measured"):
        pass
    for name, check in sorted(result.verdict.results.items()):
        with allure.step(f"check {name}: {check.word} {_counts(check.counts)}".rstrip()):
            for w in check.witnesses[:3]:
                with allure.step(witness_text(w)[:600]):
                    pass
    _attach_files(result, plots)


def fault_lines(history: Path) -> list[str]:
    """One line per nemesis op of a run, in order: 't=3.214s start partition on leader-of:orders/0 -> ...'."""
    if not history.exists():
        return []
    lines = []
    with history.open() as f:
        for text in f:
            if '"nemesis"' not in text:
                continue
            try:
                op = json.loads(text)
            except ValueError:
                continue
            if op.get("process") != "nemesis":
                continue
            value = op.get("value") or {}
            resolved = value.get("resolved")
            where = f" -> {json.dumps(resolved, default=str)[:120]}" if resolved else ""
            error = f" (error: {op['error']})" if op.get("error") else ""
            lines.append(f"t={op.get('time_ns', 0) / 1e9:.3f}s {op.get('f')} {value.get('fault')} on "
                         f"{value.get('target')}{where}{error}")
    return lines


def _attach_files(result: Any, plots: Iterable[Path]) -> None:
    import allure

    run_dir = Path(result.run_dir)
    for name, kind in (("history.jsonl", allure.attachment_type.JSON), ("nemesis-schedule.json", allure.attachment_type.JSON),
                       ("results.json", allure.attachment_type.JSON), ("test.json", allure.attachment_type.JSON)):
        path = run_dir / name
        if path.exists():
            allure.attach.file(str(path), name=name, attachment_type=kind)
    parquet = run_dir / "history.parquet"
    if parquet.exists():
        allure.attach.file(str(parquet), name="history.parquet", extension="parquet")
    for plot in plots:
        allure.attach.file(str(plot), name=Path(plot).stem, attachment_type=allure.attachment_type.PNG)


def attach_node_logs(run_dir: Path) -> None:
    """Each node's log (its tail) on the failed test, where a reviewer looks first."""
    import allure

    for log in sorted(Path(run_dir).glob("*.log")):
        allure.attach(_tail(log), name=log.name, attachment_type=allure.attachment_type.TEXT)


def _tail(path: Path) -> str:
    with path.open("rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - NODE_LOG_TAIL))
        return f.read().decode("utf-8", "replace")


def _counts(counts: dict[str, Any]) -> str:
    return "(" + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ")" if counts else ""
