"""A chaos run as data: `ChaosTest` (what to run), `Topic`, and `RunResult` (what came of it).

    ChaosTest("kip253-expansion", profile="patched", seed=7, duration_s=30, topics=[Topic("orders", 4)],
              client="ordered", faults={"mean_interval_s": 4, "window_s": [1, 3],
                                        "faults": {"admin": {...}, "partition": {...}}})

A ChaosTest is Jepsen's test map: plain data, written to every run's folder as test.json (with the
chaoskit version that wrote it), from which `chaoskit run` replays it. Its cluster spec and fault
schedule are derived from it here, so every way of starting a run derives them alike.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from chaoskit.checkers.result import verdict_word
from chaoskit.checkers.verdict import Verdict
from chaoskit.cluster.spec import ClusterSpec
from chaoskit.nemesis.schedule import Schedule, generate
from chaoskit.protocol.mutations import BROKER, CONTROLLER, MUTATIONS, checked
from chaoskit.protocol.topics import ordered_delivery

HISTORY_FILE, RESULTS_FILE, TEST_FILE = "history.jsonl", "results.json", "test.json"
VERSION_KEY = "chaoskit_version"  # in test.json: which chaoskit wrote it (a replay on another may differ)

# quick failure detection: a chaos run lasts a minute, not an hour
FAST_BROKER = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000,
               "replica.fetch.wait.max.ms": 200, "log.retention.check.interval.ms": 1000}
FAST_CONTROLLER = {"zookeeper.session.timeout.ms": 4000, "controller.request.timeout.ms": 2000,
                   "delete.topic.partition.interval.delay.ms": 1000}


JSON_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "Path": (str,),
              "dict": (dict,), "list": (list,)}


def json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def typed_fields(cls: type, values: dict[str, Any], where: str = "") -> None:
    """ValueError naming the first of `values` whose JSON type is not its field's (from the
    dataclass's annotations: `int`, `dict[str, Any] | None`, ...)."""
    for f in fields(cls):
        if f.name not in values:
            continue
        v, kinds = values[f.name], [k.strip().split("[")[0] for k in str(f.type).split("|")]
        ok = any(v is None if k == "None" else isinstance(v, JSON_TYPES.get(k, object)) for k in kinds)
        if not ok or (isinstance(v, bool) and "bool" not in kinds):
            raise ValueError(f"{where}{f.name}: expected {' or '.join(kinds)}, got {json_type(v)} {json.dumps(v)[:40]}")


def chaoskit_command() -> str:
    """The chaoskit command as a plain shell finds it: the console script beside this Python (as
    .venv/bin/chaoskit from the repository), else `chaoskit` on the PATH."""
    exe = Path(sys.executable).with_name("chaoskit")
    return _shown(exe) if exe.exists() else "chaoskit"


def _shown(path: Path) -> str:
    """`path` relative to the working folder when it is under it (shorter to read and to type)."""
    try:
        return str(Path(path).absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass
class Topic:
    name: str
    partitions: int = 4
    replication_factor: int = 3
    config: dict[str, str] = field(default_factory=dict)

    @property
    def ordered_delivery(self) -> bool:
        """The topic config `enable.ordered.delivery` (KIP-253; true unless set false)."""
        return ordered_delivery(self.config)


@dataclass
class ChaosTest:
    name: str
    profile: str = "patched"
    seed: int = 0
    duration_s: float = 30.0
    backend: str = "local"
    broker: str = "chaoskit"  # the broker under test (chaoskit.cluster.brokers): chaoskit's own or a plugin's
    broker_storage: str | None = None  # its storage engine, for a broker that has them (None: its default)
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
    engine: str = "auto"  # "local" (this process) or "spark"; auto: local below a size, Spark above
    spark_master: str | None = None
    reports: Path = Path("reports")
    drain_timeout_s: float = 60.0
    replay: str | None = None  # the command that runs this again; the plugin fills in the pytest one
    labels: dict[str, str] = field(default_factory=dict)  # epic, feature, severity for reports
    mutations: list[str] = field(default_factory=list)  # elements turned off (chaoskit.protocol.mutations)

    def to_json(self) -> dict[str, Any]:
        from chaoskit.protocol.version import VERSION

        data = asdict(self)
        data["reports"] = str(self.reports)
        return {VERSION_KEY: VERSION, **data}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChaosTest:
        """A test back from its test.json (what `chaoskit run` replays); unknown keys, a missing name
        and a field of the wrong JSON type are a ValueError that names it."""
        if not isinstance(data, dict):
            raise ValueError(f"a test is a JSON object with at least a \"name\", not a {json_type(data)}")
        values = {k: v for k, v in data.items() if k != VERSION_KEY}
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        if "name" not in values:
            raise ValueError("no \"name\": a test names itself (every run's test.json has one)")
        typed_fields(cls, values)
        for t in values.get("topics", []):
            if not isinstance(t, dict) or "name" not in t:
                raise ValueError(f"topics: each is an object with a \"name\", not {json.dumps(t)[:60]}")
            extra = set(t) - {f.name for f in fields(Topic)}
            if extra:
                raise ValueError(f"topics: unknown field(s) {sorted(extra)}; known: {[f.name for f in fields(Topic)]}")
            typed_fields(Topic, t, "topics: ")
        if "topics" in values:  # absent: the field's default
            values["topics"] = [Topic(**t) for t in values["topics"]]
        if "reports" in values:
            values["reports"] = Path(values["reports"])
        return cls(**values)

    @property
    def compacted_topics(self) -> list[str]:
        """Its topics whose cleanup.policy (theirs, else the brokers' log.cleanup.policy) compacts."""
        from chaoskit.protocol.topics import compacted

        default = str(self.broker_config.get("log.cleanup.policy", "delete"))
        return [t.name for t in self.topics if compacted(t.config, default)]

    @property
    def group_id(self) -> str:
        """The consumer group of the run's clients."""
        return f"chaoskit-{self.name}"

    def mutations_of(self, part: str) -> dict[str, list[str]]:
        """{"mutations": [...]} for the config or options of `part`, or {} (ValueError for an unknown name)."""
        names = checked(self.mutations)
        mine = sorted(n for n in names if MUTATIONS[n].part == part)
        return {"mutations": mine} if mine else {}


def on_its_broker(test: ChaosTest) -> ChaosTest:
    """`test` as its broker runs it: the storage engine named (its default when none is), the broker
    count fitted to it (one broker per SQLite file). ValueError for an unknown broker or engine."""
    from chaoskit.pluginmanager import broker_kind

    kind = broker_kind(test.broker)
    storage = kind.storage(test.broker_storage)
    return replace(test, broker_storage=storage, brokers=kind.fitted(storage, test.brokers))


def cluster_spec(test: ChaosTest, run_id: str, run_dir: Path) -> ClusterSpec:
    """The proxied cluster a test runs on, with quick failure detection under its own configs."""
    return ClusterSpec(brokers=test.brokers, controllers=test.controllers, zookeepers=test.zookeepers,
                       profile=test.profile, run_id=run_id, run_dir=run_dir, proxied=True, seed=test.seed,
                       broker_config={**FAST_BROKER, **test.broker_config, **test.mutations_of(BROKER)},
                       controller_config={**FAST_CONTROLLER, **test.controller_config,
                                          **test.mutations_of(CONTROLLER)})


def schedule_for(test: ChaosTest) -> Schedule | None:
    """The run's fault windows (None: a run without faults, the control)."""
    if not test.faults:
        return None
    return generate({**test.faults, "duration_s": test.duration_s}, test.seed)


@dataclass
class RunResult:
    test: ChaosTest
    run_id: str
    run_dir: Path
    verdict: Verdict
    schedule: Schedule | None
    stats: dict[str, Any]
    error: str | None = None  # the run itself broke (not an anomaly): its checks are what could be done
    # the anomalies the run exists to show (the unpatched side of a comparison), once a suite or the
    # demo says; None: not said. Reports then name a catch "caught, as expected", apart from a failure
    expected: set[str] | None = None

    @property
    def shown(self) -> tuple[str, str]:
        """(words, css class) a report gives the overall verdict: clean, anomaly, unknown, or
        "caught, as expected" when the anomalies found are ones the run exists to show."""
        if self.valid is False and self.expected and self.anomalies & self.expected:
            return "caught, as expected", "expected"
        word = verdict_word(self.valid)
        return word, word

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
    def run_replay(self) -> str:
        """The command that replays this run from its own test.json, as typed in a plain shell."""
        return f"{chaoskit_command()} run {_shown(self.run_dir / TEST_FILE)}"

    @property
    def replay(self) -> str:
        """How this run was started again: the pytest node with its seed for a suite's run, else
        `run_replay`."""
        return self.test.replay or self.run_replay

    @property
    def replays(self) -> list[str]:
        """Every command that replays the same schedule: `run_replay`, and the pytest one when there is."""
        return list(dict.fromkeys([self.run_replay, self.replay]))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.test.name, "run_id": self.run_id, "profile": self.test.profile, "seed": self.test.seed,
                "client": self.test.client, "duration_s": self.test.duration_s, "valid": self.valid, "error": self.error, "replay": self.replay, "replays": self.replays,
                "stats": self.stats,
                "verdict": self.verdict.to_json()}
