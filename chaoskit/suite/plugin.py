"""chaoskit's pytest plugin (the `pytest11` entry point).

Options, ini keys and markers; the `chaos` fixture (a ChaosTest run per profile, reported to
Allure; suite/chaos.py), and fixtures for the parts on their own: a proxied cluster shared by a
module, the live run around it, its fault proxy client, a nemesis, a history recorder, a
SparkSession and the registered clients. It stays light: Spark, Docker and the cluster are
imported only by the fixtures that need them.
"""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from chaoskit.checkers.engine import ENGINES
from chaoskit.cluster import capabilities as caps
from chaoskit.cluster.brokers import DEFAULT as DEFAULT_BROKER
from chaoskit.cluster.spec import BACKENDS, PROFILES
from chaoskit.run.options import seconds
from chaoskit.roles import new_seed

# (flag, ini key, help, default); every flag has an ini equivalent so a project can pin it
OPTIONS = (
    ("--chaos-backend", "chaos_backend", "cluster backend: local (processes, default) or docker", "local"),
    ("--chaos-broker", "chaos_broker", "the broker under test: chaoskit (its own, default) or one a plugin adds "
     "(tansu); a test needing what it lacks is skipped with the reason", "chaoskit"),
    ("--chaos-broker-storage", "chaos_broker_storage", "the broker's storage engine, for one that has them "
     "(tansu: sqlite, default, postgres or memory)", None),
    ("--chaos-brokers", "chaos_brokers", "how many brokers (tansu: that many over postgres, one otherwise)", None),
    ("--chaos-seed", "chaos_seed", "seed for every random choice (workload, schedule, targets); replays a run", None),
    ("--chaos-duration", "chaos_duration", "workload and faults per chaos test: 30, 30s, 2m", None),
    ("--chaos-profile", "chaos_profile", "patched, unpatched or both: which broker/controller profile to run", "both"),
    ("--spark-master", "spark_master", "Spark master URL for the checkers (default local[2]); naming one "
     "puts the checks on Spark", None),
    ("--chaos-engine", "chaos_engine", "checker engine: auto (default: this process below 5M ops, Spark above or with "
     "--spark-master), spark or local",
     None),
    ("--chaos-reports", "chaos_reports", "directory for run outputs (runs/<id>/, allure-results/)", "reports"),
    ("--chaos-client", "chaos_clients", "the clients to run each chaos test with, comma-separated (default: "
     "ordered on patched, kafka-python on unpatched); every test runs in each profile with each", None),
    ("--chaos-mutation", "chaos_mutation", "turn off elements of the proposals in every run, to show a suite "
     "catches their absence (comma-separated names; `chaoskit mutate` lists them)", None),
    ("--chaos-explore", "chaos_explore", "search schedules for this long per chaos test (e.g. 2m) from its own "
     "spec instead of one run (chaoskit explore); its first finding, shrunk, decides the claim", None),
)
CHOICES = {"--chaos-backend": BACKENDS, "--chaos-profile": (*PROFILES, "both"), "--chaos-engine": ENGINES}

MARKERS = (
    "chaos(faults=None, workload=None, duration=None, seed=None, guarantee=None, clients=None): a chaos test; "
    "the run composes these parts (a seed here pins the test and wins over --chaos-seed; `clients` the only "
    "clients it runs with; `guarantee` the promise it tests, for what clients claim)",
    "chaos_needs(*capabilities): what of the broker beyond Kafka's core the test needs "
    "(chaoskit.cluster.capabilities: kip253, kip320, kip694, guardrail, zookeeper, controllers, unpatched, "
    "mutations, storage); on a broker without it the test is skipped, saying which",
    "nightly: a long chaos run, left out of CI (run with -m nightly)",
    "docker: needs a Docker engine (the docker backend)",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaoskit", "chaoskit: chaos testing for Kafka ordering guarantees")
    for flag, ini, help_text, default in OPTIONS:
        group.addoption(flag, dest=ini, default=None, choices=CHOICES.get(flag), help=f"{help_text} (ini: {ini})")
        parser.addini(ini, help=help_text, default=default)
    group.addoption(
        "--chaos-keep",
        dest="chaos_keep",
        action="store_true",
        default=None,
        help="leave the cluster up when a chaos test fails, and print how to reach it (ini: chaos_keep)",
    )
    parser.addini("chaos_keep", help="leave the cluster up on failure", type="bool", default=False)
    parser.addini("chaos_export_round_trip", type="bool", default=False,
                  help="after each chaos run, export its history to Jepsen EDN, read it back and fail the test "
                       "if any Kafka check's result differs (chaoskit.run.round_trip)")
    group.addoption(
        "--chaos-dry-run",
        dest="chaos_dry_run",
        action="store_true",
        default=None,
        help="start nothing: write each chaos test's test.json and fault schedule under "
             "<reports>/dry-run/ and skip it (compare schedules, check a replay) (ini: chaos_dry_run)",
    )
    parser.addini("chaos_dry_run", help="write schedules only, run nothing", type="bool", default=False)
    parser.addini("chaos_allure", type="bool", default=False,
                  help="write Allure results to <chaos_reports>/allure-results when --alluredir is not given "
                       "(also switched on by the environment variable CHAOSKIT_ALLURE=1)")


@pytest.hookimpl(tryfirst=True)  # before allure-pytest's, which reads --alluredir in its own pytest_configure
def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    seed = chaos_option(config, "chaos_seed")
    # no seed given: draw one, print it in the header, and every replay command carries it
    config.stash[SEED] = int(seed) if seed not in (None, "") else new_seed()
    broker_of(config)  # an unknown broker or storage engine stops the session here, in one line
    if hasattr(config.option, "allure_report_dir") and not config.option.allure_report_dir \
            and (config.getini("chaos_allure") or os.environ.get("CHAOSKIT_ALLURE")):
        config.option.allure_report_dir = str(Path(chaos_option(config, "chaos_reports")) / "allure-results")


def pytest_report_header(config: pytest.Config) -> str:
    return (f"chaoskit: seed {config.stash[SEED]}, backend {chaos_option(config, 'chaos_backend')}, "
            f"broker {broker_of(config).title}, "
            f"profiles {chaos_option(config, 'chaos_profile')}, reports {chaos_option(config, 'chaos_reports')}")


DEFAULT_CLIENTS = {"patched": "ordered", "unpatched": "kafka-python"}
STOCK_CLIENTS = ("kafka-python", "librdkafka", "aiokafka")  # the defaults on a broker not chaoskit's own


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test using `chaos` runs once per profile asked for (and the marker allows), with each client
    asked for (--chaos-client; else the profile's default); a marker's `clients` are the only ones.
    On a broker lacking what the test needs (its `chaos_needs`, or not built here) it is skipped with
    the reason; a broker without an unpatched profile runs as it is, in the patched profile's place,
    with the stock clients by default."""
    if "chaos_case" not in metafunc.fixturenames:
        return
    asked = chaos_option(metafunc.config, "chaos_profile")
    profiles = list(PROFILES) if asked == "both" else [asked]
    marker = metafunc.definition.get_closest_marker("chaos")
    kwargs = marker.kwargs if marker else {}
    allowed = kwargs.get("profiles") or PROFILES
    chosen = [p for p in profiles if p in allowed]
    if not chosen:
        return _skip_all(metafunc, f"profile {asked} is not one this test runs ({', '.join(allowed)})")
    kind = broker_of(metafunc.config)
    needs = {c for m in metafunc.definition.iter_markers("chaos_needs") for c in m.args}
    if chaos_option(metafunc.config, "chaos_mutation"):
        needs.add(caps.MUTATIONS)
    if caps.UNPATCHED not in kind.capabilities and PROFILES[0] not in chosen:
        needs.add(caps.UNPATCHED)
    storage = chaos_option(metafunc.config, "chaos_broker_storage")
    why = kind.refusal(needs, chaos_option(metafunc.config, "chaos_backend"), storage)
    if why is not None:
        return _skip_all(metafunc, why)
    skipped = []
    if caps.UNPATCHED not in kind.capabilities:
        skipped = [pytest.param(("none", "none"), id=p, marks=pytest.mark.skip(reason=kind.lacking({caps.UNPATCHED})))
                   for p in chosen if p != PROFILES[0]]
        chosen = [PROFILES[0]]
    clients = [c.strip() for c in (chaos_option(metafunc.config, "chaos_clients") or "").split(",") if c.strip()]
    own = list(kwargs.get("clients") or ())
    if own and clients and not set(own) & set(clients):
        return _skip_all(metafunc, f"this test runs only with {', '.join(own)}, not {', '.join(clients)}")
    foreign = kind.name != DEFAULT_BROKER
    cases = []
    for profile in chosen:
        defaults = list(STOCK_CLIENTS) if foreign else [DEFAULT_CLIENTS[profile]]
        for client in [c for c in own if not clients or c in clients] or clients or defaults:
            named = (clients or foreign) and not own  # the default pairs keep their plain ids, [patched] and [unpatched]
            shown = kind.name if foreign else profile  # a foreign broker runs as it is: named, not "patched"
            cases.append(pytest.param((profile, client), id=f"{shown}-{client}" if named else shown))
    metafunc.parametrize("chaos_case", cases + skipped)


def _skip_all(metafunc: pytest.Metafunc, reason: str) -> None:
    metafunc.parametrize("chaos_case", [pytest.param(("none", "none"), marks=pytest.mark.skip(reason=reason))])


def broker_of(config: pytest.Config) -> Any:
    """The session's broker (--chaos-broker); an unknown one or a bad storage engine stops the session
    with one line."""
    from chaoskit.pluginmanager import broker_kind

    if BROKER not in config.stash:
        try:
            kind = broker_kind(chaos_option(config, "chaos_broker"))
        except ValueError as e:
            raise pytest.UsageError(f"--chaos-broker: {e}") from None
        try:
            kind.storage(chaos_option(config, "chaos_broker_storage"))
        except ValueError as e:
            raise pytest.UsageError(f"--chaos-broker-storage: {e}") from None
        brokers = chaos_option(config, "chaos_brokers")
        if brokers not in (None, "") and (not str(brokers).isdigit() or int(brokers) < 1):
            raise pytest.UsageError(f"--chaos-brokers: a count of brokers (1 or more), not {brokers!r}")
        config.stash[BROKER] = kind
    return config.stash[BROKER]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """categories.json and environment.properties beside the Allure results, when there are any."""
    config = session.config
    results = getattr(config.option, "allure_report_dir", None)
    if not results or not config.stash.get(RAN, False):
        return
    from chaoskit.protocol.version import VERSION
    from chaoskit.reporting.allure_report import write_results_files

    write_results_files(Path(results), {
        "chaoskit": VERSION, "backend": chaos_option(config, "chaos_backend"),
        "profile": chaos_option(config, "chaos_profile"), "seed": config.stash[SEED],
        "spark.master": chaos_option(config, "spark_master"), "python": platform.python_version(),
        "kafka-python": _version("kafka-python"), "confluent-kafka": _version("confluent-kafka"),
        "pyspark": _version("pyspark"), "os": platform.platform()})


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


SEED = pytest.StashKey[int]()
RAN = pytest.StashKey[bool]()
BROKER = pytest.StashKey[Any]()  # the session's chaoskit.cluster.brokers.BrokerKind
RUNS = pytest.StashKey[list]()  # (RunResult, its plots) of each chaos run, for the session's summary


def chaos_option(config: pytest.Config, name: str):
    """An option's value: the command line wins over the ini file, which wins over the default."""
    value = config.getoption(name)
    return config.getini(name) if value is None else value


def run_options(config: pytest.Config) -> Any:
    """The command line's say over every ChaosTest of the session (suite.chaos.RunOptions)."""
    from chaoskit.suite.chaos import RunOptions

    duration = chaos_option(config, "chaos_duration")
    kind, brokers = broker_of(config), chaos_option(config, "chaos_brokers")
    return RunOptions(seed=config.stash[SEED], backend=chaos_option(config, "chaos_backend"), broker=kind.name,
                      broker_storage=kind.storage(chaos_option(config, "chaos_broker_storage")) if kind.storages else None,
                      brokers=int(brokers) if brokers not in (None, "") else None,
                      duration_s=seconds(duration) if duration not in (None, "") else None,
                      spark_master=chaos_option(config, "spark_master"), engine=chaos_option(config, "chaos_engine"),
                      reports=Path(chaos_option(config, "chaos_reports")),
                      keep=bool(chaos_option(config, "chaos_keep")), dry_run=bool(chaos_option(config, "chaos_dry_run")),
                      round_trip=bool(config.getini("chaos_export_round_trip")),
                      mutations=tuple(n.strip() for n in (chaos_option(config, "chaos_mutation") or "").split(",")
                                      if n.strip()),
                      explore_s=explore_budget(chaos_option(config, "chaos_explore")))


def explore_budget(text: str | None) -> float | None:
    """--chaos-explore's budget in seconds (None: not exploring); a bad one stops the session with a line."""
    if text in (None, ""):
        return None
    from chaoskit.explore.search import parse_budget

    try:
        return parse_budget(text)
    except ValueError as e:
        raise pytest.UsageError(f"--chaos-explore: {e}") from None


# --- fixtures ----------------------------------------------------------------------------------
@pytest.fixture
def chaos(request: pytest.FixtureRequest, chaos_case: tuple[str, str]) -> Any:
    """A ChaosTest runner for this test, profile and client; see chaoskit.suite.chaos."""
    from chaoskit.reporting.allure_report import label_test
    from chaoskit.suite.chaos import LABEL_KEYS, Chaos

    marker = request.node.get_closest_marker("chaos")
    kwargs = dict(marker.kwargs) if marker else {}
    label_test({k: str(v) for k, v in kwargs.items() if k in LABEL_KEYS})
    request.config.stash[RAN] = True
    name = request.node.originalname if hasattr(request.node, "originalname") else request.node.name
    profile, client = chaos_case
    config = request.config
    return Chaos(profile, name.removeprefix("test_"), request.node.nodeid, kwargs,
                 run_options(config), report=lambda result: _report(config, result), client=client)


def _report(config: pytest.Config, result: Any) -> None:
    """Plots, the timeline and the run's page; the run's steps and files into the Allure report
    (no-ops without --alluredir); the run kept for the session's summary page."""
    from chaoskit.reporting.allure_report import report_run
    from chaoskit.reporting.summary import plot_run

    plots = plot_run(result)
    report_run(result, plots)
    config.stash.setdefault(RUNS, []).append((result, plots))


def write_session_summary(config: pytest.Config) -> Path | None:
    """The session's summary page (<chaos-reports>/suites/<id>/index.html): every chaos run side by
    side, each linking its own page; None when no chaos test ran."""
    runs = config.stash.get(RUNS, [])
    if not runs:
        return None
    from chaoskit.cluster.spec import new_run_id
    from chaoskit.reporting.summary import write_summary

    out = Path(chaos_option(config, "chaos_reports")) / "suites" / new_run_id()
    return write_summary([r for r, _ in runs], out, f"chaos tests, seed {config.stash[SEED]}",
                         {r.run_id: plots for r, plots in runs})


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """A line naming the session's summary page, when chaos tests ran."""
    try:
        index = write_session_summary(config)
    except Exception as e:  # noqa: BLE001 -- a page is a view; the tests' outcomes stand
        terminalreporter.write_line(f"chaoskit: no summary page ({type(e).__name__}: {e})")
        return
    if index is not None:
        terminalreporter.write_line(f"chaoskit: {len(config.stash[RUNS])} chaos run(s), summary {index}")


@pytest.fixture(scope="module")
def chaos_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A proxied cluster shared by a module's tests (profile from --chaos-profile, patched for both);
    a test that faults it should heal what it broke (the nemesis fixture does)."""
    from chaoskit.cluster.backends import new_cluster
    from chaoskit.cluster.spec import new_run_id
    from chaoskit.run.chaostest import ChaosTest, cluster_spec

    config = request.config
    profile = chaos_option(config, "chaos_profile")
    shared = ChaosTest("shared", profile=PROFILES[0] if profile == "both" else profile, seed=config.stash[SEED],
                       backend=chaos_option(config, "chaos_backend"), brokers=3, controllers=1)
    run_id = new_run_id()
    cluster = new_cluster(shared.backend, cluster_spec(shared, run_id, Path(chaos_option(config, "chaos_reports"))
                                                       / "runs" / run_id))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def fault_proxy(chaos_cluster: Any) -> Any:
    """The shared cluster's Toxiproxy API client (every toxic and disabled proxy reset afterwards)."""
    proxies = chaos_cluster.proxies
    try:
        yield proxies
    finally:
        proxies.reset()


@pytest.fixture
def chaos_run(chaos_cluster: Any) -> Any:
    """The live run around the shared cluster: the `test` its faults and clients are invoked with."""
    from chaoskit.run.live import Run

    return Run.around(chaos_cluster)


@pytest.fixture
def nemesis(chaos_run: Any) -> Iterator[Callable[..., Any]]:
    """`nemesis("partition", "latency")`: those faults composed and set up on the shared cluster's
    run (`nemesis(..., clients=, record=)` gives the run clients and a history), invoked as
    `n.invoke(chaos_run, op)`, and torn down (every fault healed) after the test."""
    from chaoskit.nemesis.compose import ComposedNemesis
    from chaoskit.pluginmanager import lookup

    made: list[Any] = []

    def make(*names: str, clients: list[Any] | None = None, record: Callable[..., Any] | None = None) -> Any:
        composed = ComposedNemesis({n: lookup("faults", n)() for n in names})
        chaos_run.clients, chaos_run.record = list(clients or chaos_run.clients), record or chaos_run.record
        composed.setup(chaos_run)
        made.append(composed)
        return composed

    try:
        yield make
    finally:
        for composed in made:
            composed.teardown(chaos_run)


@pytest.fixture
def history_recorder(tmp_path: Path) -> Iterator[Any]:
    """A history Recorder writing tmp_path/history.jsonl."""
    from chaoskit.history import Recorder

    with Recorder(tmp_path / "history.jsonl") as recorder:
        yield recorder


@pytest.fixture(scope="session")
def spark(pytestconfig: pytest.Config) -> Any:
    """The SparkSession the checkers use (--spark-master; local[2] by default)."""
    from chaoskit.checkers.spark.session import spark as session

    return session(chaos_option(pytestconfig, "spark_master"))


@pytest.fixture
def chaos_clients() -> dict[str, Callable[..., Any]]:
    """Every registered client factory by name (kafka-python, librdkafka, ordered, plugins')."""
    from chaoskit.pluginmanager import collect, get_plugin_manager

    return collect(get_plugin_manager(), "clients")
