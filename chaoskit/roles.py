"""The roles a chaos test is made of, side by side, each a small protocol with a no-op beside it.

As in Jepsen (client.clj, nemesis.clj, checker.clj, generator.clj):

- a *Client* turns an op into a call on the system and returns the op completed: `ok`, `fail`
  only when the error proves nothing happened, `info` when the outcome is unknown;
- a *Workload* says, purely from its seed, what each worker process does next, and what it does
  to read back after the run (Jepsen's generator and final generator);
- a *Nemesis* breaks and heals the cluster on command, one *Fault* window at a time;
- a *Checker* judges a history;
- the *Cluster* is what faults and the runner act on.

Every role method gets the same `test`: the live run (`LiveRun`; chaoskit.run.live.Run is the
implementation), which holds the run's data, its cluster, its clients and the history's `record`.
Worker processes are numbered from 0; a workload names which process plays which part, and each
process has its own Client, opened from the test's factory. All randomness flows from one seed
(`new_seed()` draws one when none is given); a failure prints the command that replays it.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, runtime_checkable

from chaoskit.history.schema import Op

if TYPE_CHECKING:  # type names only: roles stay importable by every layer
    from chaoskit.checkers.result import CheckResult
    from chaoskit.history.reader import History

SEED_SPACE = 2**31


def new_seed() -> int:
    """A fresh seed for a run that was given none (printed by every caller, so it can be replayed)."""
    return random.SystemRandom().randrange(SEED_SPACE)


# --- the cluster ---------------------------------------------------------------------------------
@runtime_checkable
class ClusterNode(Protocol):
    """One process of the cluster (ZooKeeper, controller, broker, proxy); chaoskit.cluster.node.Node."""

    name: str  # broker-1, controller-2, zookeeper-1
    role: str  # broker, controller, zookeeper, proxy

    @property
    def running(self) -> bool: ...

    @property
    def log_path(self) -> Path: ...


# not runtime_checkable: on Python 3.11 isinstance() would evaluate its properties, which act
class Cluster(Protocol):
    """What faults and the runner use of a cluster (chaoskit.cluster.local.LocalCluster, DockerCluster)."""

    run_id: str
    brokers: Mapping[int, Any]  # broker id -> its node (address, broker_id, start/stop/kill/pause)
    controllers: Mapping[int, Any]

    @property
    def nodes(self) -> list[Any]:
        """Every node, ZooKeeper first."""

    @property
    def bootstrap_servers(self) -> str:
        """host:port,... as a client reaches the brokers (through their proxies when proxied)."""

    @property
    def view(self) -> Any:
        """ZooKeeper's view of the cluster (chaoskit.cluster.zk_view.ZkView): assignments, registrations."""

    @property
    def proxies(self) -> Any:
        """The Toxiproxy API client of a proxied cluster."""

    def start(self) -> Any: ...

    def stop(self) -> None: ...

    def detach(self) -> None:
        """Leave the processes running after this program ends (--chaos-keep)."""

    def describe(self) -> dict[str, Any]: ...

    def partition_state(self, topic: str, partition: int) -> Any:
        """The partition's state znode (leader, leader_epoch, isr, mode), or None."""

    def leader_of(self, topic: str, partition: int) -> Any: ...

    def active_controller(self) -> Any: ...

    def client_address(self, broker_id: int) -> tuple[str, int]: ...

    def wait_until_replicated(self, topic: str, timeout: float = 30.0) -> Any: ...


# --- the live run: every role's `test` -----------------------------------------------------------
class LiveRun(Protocol):  # not runtime_checkable, as Cluster
    """The run in progress, the `test` argument of every role method (Jepsen's test map, live)."""

    test: Any  # the run as data (chaoskit.run.chaostest.ChaosTest), None for a bare cluster
    seed: int
    run_id: str
    run_dir: Path | None
    group_id: str  # the consumer group of the run's clients
    cluster: Cluster
    clients: list[Client]
    record: Callable[[Op], Any] | None  # the history's append, for parts that write ops of their own

    # what faults use: the proxied paths, one shared cutter, nodes by name and target specs
    @property
    def router(self) -> Any: ...

    @property
    def links(self) -> list[Any]: ...

    @property
    def cutter(self) -> Any: ...

    def node(self, name: str) -> Any: ...

    def resolve(self, target: str, pick: int) -> str: ...


# --- client and workload -------------------------------------------------------------------------
@runtime_checkable
class Client(Protocol):
    def open(self, test: LiveRun, process: int) -> Client:
        """A client for one worker process (a fresh connection, not yet used)."""

    def setup(self, test: LiveRun) -> None:
        """Once per opened client, after every process's client is open and before the workload starts."""

    def invoke(self, test: LiveRun, op: Op) -> Op:
        """Perform `op` (type invoke) and return it completed: type ok, fail or info.
        Raising means the outcome is unknown; the runner records it as info with the error."""

    def teardown(self, test: LiveRun) -> None:
        """Once per opened client, after the workload and its drain, before close."""

    def close(self, test: LiveRun) -> None:
        """Release this process's connections; called once per opened client, however the run ended."""


class Pending:
    """Nothing to do right now; ask again shortly (Jepsen's :pending). `PENDING` is the one instance."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING = Pending()


@runtime_checkable
class Workload(Protocol):
    @property
    def processes(self) -> Mapping[str, list[int]]:
        """The worker processes by part, e.g. {"producer": [0, 1], "consumer": [2]}."""

    def op(self, process: int, elapsed_s: float) -> Op | Pending | None:
        """The next op for `process` at `elapsed_s` into the run, PENDING (ask again soon) or
        None (this process is done). The same seed and the same sequence of calls for a
        process give the same ops, whatever other processes do."""

    def drain_op(self, process: int) -> Op | None:
        """After the run: the op `process` repeats to read back what was acknowledged (a final
        read), or None if it has nothing to read."""


class NoopClient:
    """Does nothing and succeeds: for dry runs of a workload and the runner's own tests."""

    def open(self, test: LiveRun, process: int) -> NoopClient:
        return self

    def setup(self, test: LiveRun) -> None:
        pass

    def invoke(self, test: LiveRun, op: Op) -> Op:
        return {**op, "type": "ok"}

    def teardown(self, test: LiveRun) -> None:
        pass

    def close(self, test: LiveRun) -> None:
        pass


class NoopWorkload:
    """No process, no op: a run of the cluster and the faults alone."""

    processes: Mapping[str, list[int]] = {}

    def op(self, process: int, elapsed_s: float) -> Op | Pending | None:
        return None

    def drain_op(self, process: int) -> Op | None:
        return None


# --- nemesis and fault ---------------------------------------------------------------------------
@runtime_checkable
class Fault(Protocol):
    """One fault window: which fault, aimed where, from when to when
    (chaoskit.nemesis.schedule.Window is the implementation schedules produce)."""

    id: int  # the window's number in its schedule
    name: str  # the fault, e.g. "partition", "kill", "latency"
    target: str  # a target spec, see chaoskit.nemesis.targets
    params: Mapping[str, Any]
    start_s: float  # seconds after the run's start
    stop_s: float  # always <= the run's duration: every fault heals


@runtime_checkable
class Nemesis(Protocol):
    """Breaks and heals the cluster on command; ops are chaoskit.nemesis.ops' start/stop ops."""

    def setup(self, test: LiveRun) -> None:
        """Prepare (connect to the proxy, look up nodes) before any fault starts."""

    def invoke(self, test: LiveRun, op: Op) -> Op:
        """Apply a start/stop op and return it completed with ``value["resolved"]`` (type info).
        Raising means the outcome is unknown; the executor records the op with an error and
        still sends the stop at heal time."""

    def teardown(self, test: LiveRun) -> None:
        """Heal anything still broken and release resources; runs however the test ended."""


class NoopNemesis:
    """Injects nothing: the control run, and the default when a test names no faults."""

    def setup(self, test: LiveRun) -> None:
        pass

    def invoke(self, test: LiveRun, op: Op) -> Op:
        return {**op, "value": {**op["value"], "resolved": None}}

    def teardown(self, test: LiveRun) -> None:
        pass


# --- checker -------------------------------------------------------------------------------------
@runtime_checkable
class Checker(Protocol):
    def check(self, test: LiveRun | None, history: History) -> CheckResult:
        """Judge the history: valid True (checked, clean), False (an anomaly, with witnesses) or
        "unknown" with the reason (nothing to judge, or could not decide). `test` is the run the
        history came from, None for a history checked on its own. Raising counts as unknown."""


class NoopChecker:
    """Judges nothing, so it knows nothing: its verdict is unknown, never a pass."""

    name = "noop"

    def check(self, test: LiveRun | None, history: History) -> CheckResult:
        from chaoskit.checkers.result import CheckResult

        return CheckResult.unknown(self.name, "the no-op checker judges nothing")


def cell_seeds(seed: int | None, n: int) -> tuple[int, list[int]]:
    """The session's seed (drawn when not given) and the n seeds its cells run, drawn from it."""
    seed = seed if seed is not None else new_seed()
    rng = random.Random(seed)
    return seed, [rng.randrange(SEED_SPACE) for _ in range(n)]
