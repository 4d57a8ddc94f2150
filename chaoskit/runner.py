"""ChaosTest: a chaos run as data, and `run()`, which composes the parts and returns a verdict.

    result = run(ChaosTest("kip253-expansion", profile="patched", seed=7, duration_s=30,
                           topics=[Topic("orders", 4)], client="ordered",
                           faults={"mean_interval_s": 4, "window_s": [1, 3],
                                   "faults": {"admin": {...}, "partition": {...}}}))
    result.valid, result.verdict.results["key-order"], result.replay

One run: a proxied cluster of the test's profile (reports/runs/<id>/ holds its logs), the topics,
the history recorder, one client per worker process, the workload and the seeded fault schedule
playing at once for `duration_s`; then every fault heals, consumers drain (read until every
acknowledged write was delivered, or a timeout), the cluster stops, and the checks run over the
history. Everything random comes from `seed`; `replay` is the command that runs it again.
Faults, workloads and clients are looked up by name in the plugin registry (`chaoskit_add_*`).
"""
from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from chaoskit.cluster.spec import ClusterSpec, new_run_id
from chaoskit.nemesis.base import FaultContext
from chaoskit.nemesis.executor import MonotonicClock, run_schedule
from chaoskit.nemesis.protocol import ComposedNemesis, NoopNemesis
from chaoskit.nemesis.schedule import Schedule, generate
from chaoskit.pluginmanager import collect, get_plugin_manager
from chaoskit.workers import WorkerPool

log = logging.getLogger("chaoskit.runner")
HISTORY_FILE, RESULTS_FILE, TEST_FILE = "history.jsonl", "results.json", "test.json"

# quick failure detection: a chaos run lasts a minute, not an hour
FAST_BROKER = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000,
               "replica.fetch.wait.max.ms": 200}
FAST_CONTROLLER = {"zookeeper.session.timeout.ms": 4000, "controller.request.timeout.ms": 2000,
                   "delete.topic.partition.interval.delay.ms": 1000}


@dataclass
class Topic:
    name: str
    partitions: int = 4
    replication_factor: int = 3
    config: dict[str, str] = field(default_factory=dict)


@dataclass
class ChaosTest:
    name: str
    profile: str = "patched"
    seed: int = 0
    duration_s: float = 30.0
    backend: str = "local"
    brokers: int = 3
    controllers: int = 2
    zookeepers: int = 1
    broker_config: dict[str, Any] = field(default_factory=dict)
    controller_config: dict[str, Any] = field(default_factory=dict)
    topics: list[Topic] = field(default_factory=lambda: [Topic("orders")])
    workload: str = "keyed-sequences"
    workload_options: dict[str, Any] = field(default_factory=dict)
    client: str = "kafka-python"
    client_options: dict[str, Any] = field(default_factory=dict)
    faults: dict[str, Any] | None = None  # a schedule spec without duration_s (the run's is used)
    checks: list[str] | None = None  # None: every Kafka check
    engine: str = "spark"  # or "local": the same checks in one process
    spark_master: str | None = None
    reports: Path = Path("reports")
    drain_timeout_s: float = 60.0
    replay: str | None = None  # the command that runs this again; the plugin fills in the pytest one
    labels: dict[str, str] = field(default_factory=dict)  # epic, feature, severity for reports

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["reports"] = str(self.reports)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChaosTest:
        """A test back from its test.json (what `chaoskit run` replays); unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"test file: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        values = dict(data)
        values["topics"] = [Topic(**t) if isinstance(t, dict) else t for t in values.get("topics", [])]
        if "reports" in values:
            values["reports"] = Path(values["reports"])
        return cls(**values)


@dataclass
class RunResult:
    test: ChaosTest
    run_id: str
    run_dir: Path
    verdict: Any  # chaoskit.checkers.protocol.Verdict
    schedule: Schedule | None
    stats: dict[str, Any]
    error: str | None = None  # the run itself broke (not an anomaly): its checks are what could be done

    @property
    def valid(self) -> Any:
        return "unknown" if self.error else self.verdict.valid

    @property
    def history(self) -> Path:
        return self.run_dir / HISTORY_FILE

    @property
    def anomalies(self) -> set[str]:
        """The checks that found something (valid false)."""
        return {name for name, r in self.verdict.results.items() if r.valid is False}

    @property
    def replay(self) -> str:
        return self.test.replay or f"chaoskit run {self.run_dir / TEST_FILE}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.test.name, "run_id": self.run_id, "profile": self.test.profile, "seed": self.test.seed,
                "valid": self.valid, "error": self.error, "replay": self.replay, "stats": self.stats,
                "verdict": self.verdict.to_json()}


class Run:
    """What the parts see of a run in progress: the `test` argument of clients and nemeses."""

    def __init__(self, test: ChaosTest, run_id: str, run_dir: Path) -> None:
        self.test, self.run_id, self.run_dir = test, run_id, run_dir
        self.seed = test.seed
        self.group_id = f"chaoskit-{test.name}"
        self.cluster: Any = None
        self.record: Any = None
        self.clients: list[Any] = []


def cluster_spec(test: ChaosTest, run_id: str, run_dir: Path) -> ClusterSpec:
    return ClusterSpec(brokers=test.brokers, controllers=test.controllers, zookeepers=test.zookeepers,
                       profile=test.profile, run_id=run_id, run_dir=run_dir, proxied=True, seed=test.seed,
                       broker_config={**FAST_BROKER, **test.broker_config},
                       controller_config={**FAST_CONTROLLER, **test.controller_config})


def make_cluster(test: ChaosTest, spec: ClusterSpec) -> Any:
    from chaoskit.cluster.backends import new_cluster  # docker (and its SDK) only when asked for

    return new_cluster(test.backend, spec)


def _lookup(kind: str, name: str) -> Any:
    factories = collect(get_plugin_manager(), kind)
    if name not in factories:
        raise ValueError(f"no {kind[:-1]} named {name!r}; installed: {', '.join(sorted(factories)) or 'none'}")
    return factories[name]


def schedule_for(test: ChaosTest) -> Schedule | None:
    """The run's fault windows (None: a run without faults, the control)."""
    if not test.faults:
        return None
    return generate({**test.faults, "duration_s": test.duration_s}, test.seed)


def run(test: ChaosTest, progress: bool = False, keep: bool = False) -> RunResult:
    """Run `test` start to finish; every fault is healed and the cluster stopped however it ends,
    except with `keep`, when a run that is not clean leaves its cluster up (its processes detached
    from the reaper) for a look, and the result says how to reach it and take it down."""
    run_id = new_run_id()
    run_dir = Path(test.reports) / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / TEST_FILE).write_text(json.dumps(test.to_json(), indent=1) + "\n")
    pm = get_plugin_manager()
    ctx = Run(test, run_id, run_dir)
    schedule = schedule_for(test)
    if schedule is not None:
        schedule.write(run_dir)
    stats: dict[str, Any] = {}
    error: str | None = None
    began = time.monotonic()
    cluster = None
    try:
        cluster = _play(test, ctx, schedule, stats, progress)
    except Exception as e:  # noqa: BLE001 -- a broken run still gets its history checked and reported
        log.exception("run %s broke", run_id)
        error = f"{type(e).__name__}: {e}"
    stats["run_seconds"] = round(time.monotonic() - began, 3)
    if cluster is not None and not keep:
        cluster.stop()  # before the checks: they need the CPU, not the cluster
        cluster = None
    verdict = None
    checking = time.monotonic()
    try:
        verdict = check(test, run_dir / HISTORY_FILE)
        stats["check_s"] = round(time.monotonic() - checking, 3)
    finally:
        if cluster is not None:  # kept up for a look only if the run is not clean
            _release(cluster, error is not None or not verdict_is_clean(verdict), stats)
    result = RunResult(test, run_id, run_dir, verdict, schedule, stats, error)
    (run_dir / RESULTS_FILE).write_text(json.dumps(result.to_json(), indent=1, default=str) + "\n")
    pm.hook.chaoskit_run_end(run=ctx, result=result)
    return result


def _play(test: ChaosTest, ctx: Run, schedule: Schedule | None, stats: dict[str, Any], progress: bool) -> Any:
    """Start the cluster and play the run on it; returns the cluster, still up (run() stops it)."""
    workload = _lookup("workloads", test.workload)(seed=test.seed, duration_s=test.duration_s,
                                                   **{**({"topic": test.topics[0].name} if test.topics else {}),
                                                      **test.workload_options})
    prototype = _lookup("clients", test.client)(**test.client_options)
    faults = schedule.spec.fault_names if schedule is not None else set()
    nemesis = ComposedNemesis({name: _lookup("faults", name)() for name in sorted(faults)}) if faults \
        else NoopNemesis()
    began = time.monotonic()
    cluster = make_cluster(test, cluster_spec(test, ctx.run_id, ctx.run_dir))
    try:
        cluster.start()
        stats["cluster_up_s"] = round(time.monotonic() - began, 3)
        _play_on(cluster, test, ctx, schedule, stats, progress, workload, prototype, nemesis)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _play_on(cluster: Any, test: ChaosTest, ctx: Run, schedule: Schedule | None, stats: dict[str, Any],
             progress: bool, workload: Any, prototype: Any, nemesis: Any) -> None:
    from chaoskit.client.admin import AdminClient
    from chaoskit.history import Recorder

    with Recorder(ctx.run_dir / HISTORY_FILE) as recorder:
        ctx.cluster, ctx.record = cluster, recorder.record
        with AdminClient(cluster.bootstrap_servers) as admin:
            for t in test.topics:
                admin.create_topic(t.name, t.partitions, t.replication_factor, t.config)
        for t in test.topics:
            cluster.wait_until_replicated(t.name)
        get_plugin_manager().hook.chaoskit_run_start(run=ctx)
        processes = [p for ps in workload.processes.values() for p in ps]
        clients = {p: prototype.open(ctx, p) for p in processes}
        ctx.clients = list(clients.values())
        clock = MonotonicClock()
        pool = WorkerPool(workload, clients, ctx, recorder.record, clock.now)
        stop = threading.Event()
        nemesis.setup(FaultContext(cluster, ctx.clients, recorder.record))
        faulting = threading.Thread(target=_faults, args=(nemesis, schedule, _noting_failed_starts(recorder.record, stats),
                                                          clock, stop, stats),
                                    name="nemesis", daemon=True)
        try:
            pool.start()
            faulting.start()
            with _Progress(progress, test, pool, clock):
                pool.join(test.duration_s + 120)
                faulting.join(test.duration_s + 120)
                stats["drained"] = pool.drain(test.drain_timeout_s)
        finally:
            stop.set()
            pool.stop()
            faulting.join(60)
            nemesis.teardown(ctx)
            for client in clients.values():
                try:
                    client.close(ctx)
                except Exception as e:  # noqa: BLE001 -- close the others
                    log.warning("closing a client: %r", e)
        stats.update(ops=pool.ops, acked=len(pool.acked), undelivered=pool.undelivered)


def _noting_failed_starts(record: Any, stats: dict[str, Any]) -> Any:
    """`record`, also listing in stats["fault_errors"] each fault whose start raised (a suite whose
    scripted step failed did not test what it claims)."""
    def note(op: dict[str, Any]) -> Any:
        if op.get("f") == "start" and op.get("error"):
            value = op.get("value") or {}
            stats.setdefault("fault_errors", []).append(
                {"fault": value.get("fault"), "window": value.get("window"), "error": str(op["error"]).splitlines()[0]})
        return record(op)
    return note


def _faults(nemesis: Any, schedule: Schedule | None, record: Any, clock: Any, stop: threading.Event,
            stats: dict[str, Any]) -> None:
    try:
        run_schedule(nemesis, schedule.windows if schedule is not None else (), record, clock, stop)
    except Exception as e:  # noqa: BLE001 -- a heal that failed is the run's error, reported in stats
        stats["nemesis_error"] = f"{type(e).__name__}: {e}"


def verdict_is_clean(verdict: Any) -> bool:
    return verdict is not None and verdict.valid is True


def _release(cluster: Any, kept: bool, stats: dict[str, Any]) -> None:
    """Stop the cluster, or leave it up (detached from its reaper) and say how to reach it."""
    if not kept:
        cluster.stop()
        return
    cluster.detach()
    stats["kept"] = {"bootstrap_servers": cluster.bootstrap_servers, "run_id": cluster.run_id,
                     "down": f"chaoskit cluster down {cluster.run_id}"}
    log.warning("the cluster of run %s is left up: bootstrap servers %s; take it down with: %s",
                cluster.run_id, cluster.bootstrap_servers, stats["kept"]["down"])


def check(test: ChaosTest, history: Path) -> Any:
    """The test's checks over a run's history (a missing history checks as empty: unknown)."""
    from chaoskit.checkers.protocol import Verdict
    from chaoskit.checkers.result import CheckResult
    from chaoskit.checkers.run import run_checks
    from chaoskit.checkers.source import History

    if not history.exists():
        return Verdict({"history": CheckResult.unknown("history", f"the run wrote no history at {history}")})
    ops = History.from_path(history)
    # the Parquet beside the JSONL: what Spark reads, and what a report attaches for a look in pandas
    ops.source = ops.to_parquet(history.with_suffix(".parquet"))
    return run_checks(ops, test.checks, engine=test.engine, master=test.spark_master)


class _Progress:
    """A live line on the terminal (rich) for runs longer than a few seconds: time, ops, faults."""

    def __init__(self, enabled: bool, test: ChaosTest, pool: WorkerPool, clock: Any) -> None:
        self.enabled = enabled and test.duration_s >= 5
        self.test, self.pool, self.clock = test, pool, clock
        self._live: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
            self._live = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                                  TextColumn("{task.fields[ops]} ops, {task.fields[undelivered]} undelivered"),
                                  console=Console(stderr=True), transient=True)
            self._live.start()
            task = self._live.add_task(f"{self.test.name} [{self.test.profile}]", total=self.test.duration_s,
                                       ops=0, undelivered=0)
            self._thread = threading.Thread(target=self._tick, args=(task,), daemon=True)
            self._thread.start()
        return self

    def _tick(self, task: Any) -> None:
        while not self._stop.wait(0.5):
            self._live.update(task, completed=min(self.clock.now(), self.test.duration_s), ops=self.pool.ops,
                              undelivered=self.pool.undelivered)

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._live is not None:
            self._live.stop()
