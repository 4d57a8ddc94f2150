"""`run(ChaosTest)`: one chaos run, start to finish, written as the phases it goes through.

    prepare      the run's folder, test.json and fault schedule; the workload, client and faults by name
    cluster up   a proxied cluster of the test's profile (its logs in reports/runs/<id>/), the topics
    recording    the history (history.jsonl), appended by every part
    roles set up one client per worker process (opened, then set up), the nemesis set up
    play         the workload and the fault schedule at once, for `duration_s`
    heal         the schedule's end: every fault healed
    drain        consumers read until every acknowledged write was delivered (or a timeout)
    restore      each compacted topic read back from its start, as a restore would (run/restore.py)
    analyze      the cluster stopped, the checks over the history

Each phase that starts something is a context manager that ends it on the way out, in reverse
order, however the run ended. Everything random comes from the test's seed; the result's `replay`
is the command that runs it again. Parts are looked up by name in the plugin registry.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from chaoskit.checkers.verdict import Verdict
from chaoskit.cluster.spec import new_run_id
from chaoskit.nemesis.compose import ComposedNemesis
from chaoskit.nemesis.executor import MonotonicClock, run_schedule
from chaoskit.nemesis.schedule import Schedule
from chaoskit.pluginmanager import get_plugin_manager, lookup
from chaoskit.protocol.mutations import CLIENT
from chaoskit.roles import Client, Nemesis, NoopNemesis, Workload
from chaoskit.run.chaostest import (HISTORY_FILE, RESULTS_FILE, TEST_FILE, ChaosTest, RunResult, cluster_spec,
                                    schedule_for)
from chaoskit.history.availability import availability
from chaoskit.run.live import Run
from chaoskit.run.progress import ProgressLine
from chaoskit.run.workers import WorkerPool
from chaoskit.run.client_logs import client_logs

log = logging.getLogger("chaoskit.runner")
SLACK_S = 120  # past its duration, how long the workload and the schedule may take to wind down
CLOSE_WAIT_S = 60  # how long the clients' closes may take before the run goes on without them


@dataclass
class Parts:
    """A run's parts as the phases assemble them."""

    test: ChaosTest
    live: Run
    schedule: Schedule | None
    progress: bool = False
    stats: dict[str, Any] = field(default_factory=dict)
    workload: Workload | None = None
    client: Client | None = None  # the prototype each worker process's client is opened from
    nemesis: Nemesis = field(default_factory=NoopNemesis)
    pool: WorkerPool | None = None
    clock: MonotonicClock | None = None  # the run's time, from the moment the parts are set up
    faulting: threading.Thread | None = None
    kept_up: bool = False  # the cluster was left up for release() to decide (keep)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def history(self) -> Path:
        return self.live.run_dir / HISTORY_FILE  # type: ignore[operator]


def run(test: ChaosTest, progress: bool = False, keep: bool = False, lane: Any = None) -> RunResult:
    """Run `test` start to finish; every fault is healed and the cluster stopped however it ends,
    except with `keep`, when a run that is not clean leaves its cluster up (its processes detached
    from the reaper) for a look, and the result says how to reach it and take it down. With a
    `lane` (chaoskit.explore.lanes.Lane) the run uses the lane's cluster, which outlives it."""
    parts = prepare(test, progress)
    error: str | None = None
    began = time.monotonic()
    try:
        compose_parts(parts)
        with ExitStack() as phases:
            phases.enter_context(client_logs(parts.live.run_dir))
            phases.enter_context(cluster_up(parts, keep) if lane is None else lane_cluster(parts, lane))
            phases.enter_context(recording(parts))
            phases.enter_context(roles_set_up(parts))
            phases.enter_context(running(parts))
            play(parts)
            heal(parts)
            drain(parts)
            restore(parts)
    except Exception as e:  # noqa: BLE001 -- a broken run still gets its history checked and reported
        log.exception("run %s broke", parts.live.run_id)
        error = f"{type(e).__name__}: {e}"
    parts.stats["run_seconds"] = round(time.monotonic() - began, 3)
    verdict = analyze(parts)
    release(parts, kept=verdict.valid is not True)
    result = RunResult(test, parts.live.run_id, parts.live.run_dir, verdict, parts.schedule, parts.stats, error)
    (parts.live.run_dir / RESULTS_FILE).write_text(json.dumps(result.to_json(), indent=1, default=str) + "\n")
    from chaoskit.reporting.summary import page_quietly

    page_quietly(result)  # the run's own page: reports/runs/<id>/index.html
    get_plugin_manager().hook.chaoskit_run_end(run=parts.live, result=result)
    return result


# --- the phases --------------------------------------------------------------------------------
def prepare(test: ChaosTest, progress: bool = False) -> Parts:
    """The run's folder with its test.json and fault schedule (what a replay needs, written first)."""
    run_id = new_run_id()
    run_dir = Path(test.reports) / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / TEST_FILE).write_text(json.dumps(test.to_json(), indent=1) + "\n")
    schedule = schedule_for(test)
    if schedule is not None:
        schedule.write(run_dir)
    return Parts(test, Run(test, run_id, run_dir), schedule, progress)


def compose_parts(parts: Parts) -> None:
    """The workload, the client and the faults the test names, from the plugin registry."""
    test = parts.test
    topic = {"topic": test.topics[0].name} if test.topics else {}
    parts.workload = lookup("workloads", test.workload)(seed=test.seed, duration_s=test.duration_s,
                                                        **{**topic, **test.workload_options})
    parts.client = lookup("clients", test.client)(**{**test.client_options, **test.mutations_of(CLIENT)})
    faults = sorted(parts.schedule.spec.fault_names) if parts.schedule is not None else []
    if faults:
        parts.nemesis = ComposedNemesis({name: lookup("faults", name)() for name in faults})


@contextmanager
def cluster_up(parts: Parts, keep: bool = False) -> Iterator[Any]:
    """The test's cluster started and its topics replicated; stopped on the way out (left up with
    `keep` when the run got through, for `release` to decide once the verdict is in)."""
    from chaoskit.pluginmanager import broker_kind

    test, live = parts.test, parts.live
    began = time.monotonic()
    cluster = broker_kind(test.broker).new_cluster(test.backend, cluster_spec(test, live.run_id, live.run_dir), test)
    live.cluster = cluster
    try:
        cluster.start()
        parts.stats["cluster_up_s"] = round(time.monotonic() - began, 3)
        create_topics(test, cluster)
        yield cluster
    except BaseException:
        cluster.stop()
        raise
    if keep:
        parts.kept_up = True
    else:
        cluster.stop()  # before the checks: they need the CPU, not the cluster


@contextmanager
def lane_cluster(parts: Parts, lane: Any) -> Iterator[Any]:
    """The lane's cluster (started when it has none for this test), the test's topics created on it;
    on the way out the lane takes the run's node logs and restores the cluster for the next run."""
    began = time.monotonic()
    cluster = parts.live.cluster = lane.cluster_for(parts.test)
    parts.stats["cluster_up_s"] = round(time.monotonic() - began, 3)
    try:
        create_topics(parts.test, cluster)
        yield cluster
    finally:
        lane.done(parts.test, parts.live.run_dir)


def create_topics(test: ChaosTest, cluster: Any) -> None:
    """The test's topics, created and fully replicated."""
    from chaoskit.client.admin import AdminClient

    with AdminClient(cluster.bootstrap_servers) as admin:
        for t in test.topics:
            admin.create_topic(t.name, t.partitions, t.replication_factor, t.config)
    for t in test.topics:
        cluster.wait_until_replicated(t.name)


@contextmanager
def recording(parts: Parts) -> Iterator[None]:
    """The history, open for every part's ops until the run's parts are done."""
    from chaoskit.history import Recorder

    with Recorder(parts.history) as recorder:
        parts.live.record = recorder.record
        parts.stats["history_wall"] = round(recorder.began_wall, 3)
        yield


@contextmanager
def roles_set_up(parts: Parts) -> Iterator[None]:
    """Each worker process's client opened and set up, and the nemesis set up, once the cluster
    is up; torn down in reverse however the run ends (Jepsen's with-client+nemesis-setup-teardown)."""
    live = parts.live
    assert parts.workload is not None and parts.client is not None
    get_plugin_manager().hook.chaoskit_run_start(run=live)
    processes = [p for ps in parts.workload.processes.values() for p in ps]
    clients: dict[int, Client] = {}
    try:
        for p in processes:
            clients[p] = parts.client.open(live, p)
        live.clients = list(clients.values())
        for client in live.clients:
            client.setup(live)
        parts.clock = MonotonicClock()
        parts.pool = WorkerPool(parts.workload, clients, live, live.record, parts.clock.now)
        parts.nemesis.setup(live)
        yield
    finally:
        try:
            parts.nemesis.teardown(live)
        finally:
            _close_all(list(clients.values()), live)


def _close_all(clients: list[Client], live: Run) -> None:
    """Each client torn down and closed, all at once: a stock producer's close waits for its pending
    sends (to a leader gone, a partition removed) for seconds, which one after the other add up."""
    def close(client: Client) -> None:
        _quietly(client.teardown, live)
        _quietly(client.close, live)

    threads = [threading.Thread(target=close, args=(c,), name=f"close-{i}", daemon=True) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + CLOSE_WAIT_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


def _quietly(step: Any, live: Run) -> None:
    try:
        step(live)
    except Exception as e:  # noqa: BLE001 -- close the others
        log.warning("%s of a client: %r", step.__name__, e)


@contextmanager
def running(parts: Parts) -> Iterator[None]:
    """The worker processes and the nemesis playing the schedule, each in its own thread (and the
    progress line); stopped on the way out."""
    pool = parts.pool
    assert pool is not None
    record = _noting_faults(parts.live.record, parts.stats)
    parts.faulting = threading.Thread(target=_faults, args=(parts, record), name="nemesis", daemon=True)
    try:
        with ProgressLine(parts.progress, parts.test, pool, parts.clock):
            pool.start()
            parts.faulting.start()
            yield
    finally:
        parts.stop.set()
        pool.stop()
        if parts.faulting.is_alive():
            parts.faulting.join(60)
        parts.stats.update(ops=pool.ops, acked=len(pool.acked), undelivered=pool.undelivered)


def phase(parts: Parts, name: str) -> None:
    """The history's mark that the run got to `name`: a check that needs the drain judges only a
    history that holds the drain's end (run/checks.py)."""
    from chaoskit.history.schema import PHASE, RUNNER_PROCESS

    parts.live.record({"process": RUNNER_PROCESS, "type": "info", "f": PHASE, "value": name})


def play(parts: Parts) -> None:
    """Until every worker process has done its ops (the workload's time is up)."""
    assert parts.pool is not None
    phase(parts, "play")
    parts.pool.join(parts.test.duration_s + SLACK_S)


def heal(parts: Parts) -> None:
    """Until the schedule has played out: its end heals every fault still active."""
    assert parts.faulting is not None
    phase(parts, "heal")
    parts.faulting.join(parts.test.duration_s + SLACK_S)


def drain(parts: Parts) -> None:
    """Consumers read until every acknowledged write was delivered, or the drain's timeout."""
    from chaoskit.history.schema import DRAINED

    assert parts.pool is not None
    phase(parts, "drain")
    parts.stats["drained"] = parts.pool.drain(parts.test.drain_timeout_s)
    parts.stats["drain_end"] = parts.pool.drain_end
    phase(parts, DRAINED)


def restore(parts: Parts) -> None:
    """Each compacted topic read from its start to its end, what compaction left recorded as ops."""
    from chaoskit.run.restore import restore_read

    topics = parts.test.compacted_topics
    if topics:
        parts.stats["restored"] = restore_read(parts.live.cluster.bootstrap_servers, topics, parts.live.record)


def analyze(parts: Parts) -> Verdict:
    """The test's checks over the run's history (a missing history checks as empty: unknown).
    The history's Parquet copy is written beside it: what Spark reads and reports attach."""
    from chaoskit.run.checks import run_checks
    from chaoskit.checkers.result import CheckResult
    from chaoskit.history.parquet import convert_jsonl
    from chaoskit.history.reader import History

    checking = time.monotonic()
    if not parts.history.exists():
        return Verdict({"history": CheckResult.unknown("history", f"the run wrote no history at {parts.history}")})
    history = History.from_path(parts.history)
    history.source, _ = convert_jsonl(parts.history, parts.history.with_suffix(".parquet"))  # streamed, in chunks
    parts.stats["availability"] = availability(history.ops)
    test = parts.test
    from chaoskit.checkers.spark.session import copy_log_since, log_mark

    mark = log_mark()
    verdict = run_checks(history, test.checks, engine=test.engine, master=test.spark_master, test=parts.live,
                         unordered_topics=[t.name for t in test.topics if not t.ordered_delivery],
                         compacted_topics=test.compacted_topics)
    copy_log_since(mark, parts.live.run_dir / "spark.log")  # type: ignore[operator]  # Spark's lines for it
    parts.stats["engine"] = verdict.engine
    parts.stats["check_s"] = round(time.monotonic() - checking, 3)
    return verdict


def release(parts: Parts, kept: bool) -> None:
    """A cluster still up (`keep`) is stopped, or, for a run that is not clean, left up (detached
    from its reaper) with how to reach it and take it down."""
    cluster = parts.live.cluster
    if not parts.kept_up:
        return
    if not kept:
        cluster.stop()
        return
    cluster.detach()
    parts.stats["kept"] = {"bootstrap_servers": cluster.bootstrap_servers, "run_id": cluster.run_id,
                           "down": f"chaoskit cluster down {cluster.run_id}"}
    log.warning("the cluster of run %s is left up: bootstrap servers %s; take it down with: %s",
                cluster.run_id, cluster.bootstrap_servers, parts.stats["kept"]["down"])


# --- helpers -----------------------------------------------------------------------------------
def _noting_faults(record: Any, stats: dict[str, Any]) -> Any:
    """`record`, also listing in stats["fault_errors"] each fault whose start raised (a suite whose
    scripted step failed did not test what it claims) and in stats["fault_steps"] the steps each
    staged story recorded (the evidence that the story happened)."""
    def note(op: dict[str, Any]) -> Any:
        value = op.get("value") or {}
        if op.get("f") == "start" and op.get("error"):
            stats.setdefault("fault_errors", []).append(
                {"fault": value.get("fault"), "window": value.get("window"), "error": str(op["error"]).splitlines()[0]})
        resolved = value.get("resolved") if isinstance(value, dict) else None
        if op.get("f") == "start" and isinstance(resolved, dict) and isinstance(resolved.get("steps"), list):
            stats.setdefault("fault_steps", {}).setdefault(value.get("fault"), []).extend(
                step[0] if isinstance(step, list) else step for step in resolved["steps"])
        return record(op)
    return note


def _faults(parts: Parts, record: Any) -> None:
    windows = parts.schedule.windows if parts.schedule is not None else ()
    try:
        run_schedule(parts.nemesis, windows, record, parts.clock, parts.stop, test=parts.live)
    except Exception as e:  # noqa: BLE001 -- a heal that failed is the run's error, reported in stats
        parts.stats["nemesis_error"] = f"{type(e).__name__}: {e}"
