"""The SparkSession the checks run on: built on first use, once per process, then reused.

local[2] unless a master is given (`--spark-master`: spark://, yarn, k8s://, or sc:// for Spark
Connect); no UI; no adaptive execution, shuffle partitions sized per history from its rows and the
cores instead (`size_shuffles`); compiled code kept for every stage of a check set (`CODEGEN_CACHE`);
the local driver's heap a quarter of the machine's memory (`driver_memory`), on the newest JDK
installed that Spark supports unless JAVA_HOME says which (`driver_java_home`); pyspark's capture
of each DataFrame call's Python call site off (four JVM round trips a call). pyspark is imported
here only, so nothing else pays for the JVM.

Quiet: the terminal shows chaoskit's lines only. The JVM (and the Python workers it starts) write
to the process's Spark log (`log_path()`: CHAOSKIT_SPARK_LOG, or a file in the temporary directory;
`-` keeps them on the terminal); a run copies the part its checks wrote to its folder's spark.log
(`copy_log_since`).
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

DEFAULT_MASTER = "local[2]"
SHUFFLE_PARTITIONS = 4
_lock = threading.Lock()
_session: Any = None
_master: str | None = None
LOG_ENV = "CHAOSKIT_SPARK_LOG"  # a file for Spark's and the JVM's output, or "-" for the terminal


def log_path() -> Path | None:
    """Where Spark's and the JVM's output goes in this process; None: the terminal."""
    where = os.environ.get(LOG_ENV)
    if where == "-":
        return None
    return Path(where) if where else Path(tempfile.gettempdir()) / f"chaoskit-spark-{os.getpid()}.log"


def log_mark() -> int:
    """The Spark log's size now: what a run's checks write comes after it."""
    path = log_path()
    return path.stat().st_size if path is not None and path.exists() else 0


def copy_log_since(mark: int, to: Path) -> Path | None:
    """What the Spark log gained since `mark`, appended to `to` (a run's spark.log); None if nothing."""
    path = log_path()
    if path is None or not path.exists() or path.stat().st_size <= mark:
        return None
    with open(path, "rb") as src, open(to, "ab") as dst:
        src.seek(mark)
        dst.write(src.read())
    return to


@contextmanager
def output_to_log() -> Iterator[None]:
    """While the JVM starts, file descriptors 1 and 2 point at the Spark log: the JVM inherits them
    (and passes them to the Python workers it starts), so none of their lines reach the terminal.
    Ours are restored as soon as it is up."""
    path = log_path()
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (log, *saved):
            os.close(fd)


def spark(master: str | None = None) -> Any:
    """The process's SparkSession for `master` (a different master stops the old one first)."""
    global _session, _master
    want = master or DEFAULT_MASTER
    with _lock:
        if _session is not None and _master == want:
            return _session
        if _session is not None:
            _session.stop()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers use our venv's Python
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        if is_connect(want):  # Spark Connect: a client of a server that runs the driver; no JVM here
            _session = SparkSession.builder.remote(want).getOrCreate()
            for key, value in SQL_SETTINGS.items():
                _session.conf.set(key, value)
        else:
            with output_to_log(), _java_home(driver_java_home() if want.startswith("local") else None):
                _session = _build(SparkSession.builder.master(want))
            _session.sparkContext.setLogLevel("WARN")
        _master = want
        return _session


# Spark 4 runs on Java 17, 21 and 25 (its docs' index). A newer JDK's JIT runs the check set faster:
# JDK 25 against 17 on this 2-core machine, alternately (docs/scaling.md, 2026-11-28): 1M events
# 13.1-17.7 s against 15.7-18.9 s on a first pass; 10M 51.6 s against 65.5 s first, 46.0 against 60.6 again
SPARK_JAVA_MAJORS = (17, 21, 25)
JVM_DIR = Path("/usr/lib/jvm")  # where Debian's and Adoptium's packages install JDKs


def driver_java_home(jvm_dir: Path = JVM_DIR) -> str | None:
    """The JDK a local driver is launched on: the newest under `jvm_dir` that Spark supports, if it is
    newer than 17 (Spark's oldest, Debian 12's only); None, pyspark's own choice (JAVA_HOME, else
    the `java` on PATH), when JAVA_HOME is set or there is none. A cluster's driver and executors
    keep their own Java: they must run one version."""
    if os.environ.get("JAVA_HOME") or not jvm_dir.is_dir():
        return None
    found: dict[int, Path] = {}
    for home in sorted(jvm_dir.iterdir()):
        major = java_major(home)
        if major in SPARK_JAVA_MAJORS and os.access(home / "bin" / "java", os.X_OK):
            found.setdefault(major, home)
    newest = max(found, default=0)
    return str(found[newest]) if newest > min(SPARK_JAVA_MAJORS) else None


def java_major(home: Path) -> int | None:
    """The feature release of the JDK at `home` (25 for JAVA_VERSION="25.0.3", 8 for "1.8.0_402"),
    from its `release` file; None when it has none."""
    try:
        text = (home / "release").read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("JAVA_VERSION="):
            parts = line.split("=", 1)[1].strip().strip('"').split(".")
            number = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]
            return int(number) if number.isdigit() else None
    return None


@contextmanager
def _java_home(home: str | None) -> Iterator[None]:
    """JAVA_HOME set to `home` while pyspark launches the driver's JVM (it reads the environment),
    as it was again after."""
    if home is None:
        yield
        return
    os.environ["JAVA_HOME"] = home
    try:
        yield
    finally:
        del os.environ["JAVA_HOME"]


def is_connect(master: str | None) -> bool:
    """A Spark Connect URL (sc://host:port): the session is a client, the driver is the server's."""
    return bool(master) and master.startswith("sc://")  # type: ignore[union-attr]


def driver_memory() -> str:
    """The local driver's heap (it is the executor too in local mode, and holds the cached history):
    CHAOSKIT_SPARK_DRIVER_MEMORY, else a quarter of this machine's memory, 2 to 16 GiB."""
    if os.environ.get("CHAOSKIT_SPARK_DRIVER_MEMORY"):
        return os.environ["CHAOSKIT_SPARK_DRIVER_MEMORY"]
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "2g"
    return f"{min(16, max(2, total // 4 >> 30))}g"


def size_shuffles(session: Any, rows: int) -> int:
    """Shuffle partitions for a history of `rows` rows: one per ROWS_PER_SHUFFLE_PARTITION rows, at
    least one per core (adaptive execution is off: this is the count every shuffle uses). Set on the
    session before a check."""
    cores = SHUFFLE_PARTITIONS
    try:
        cores = session.sparkContext.defaultParallelism
    except Exception:  # noqa: BLE001 -- Spark Connect has no SparkContext: keep the default
        pass
    n = max(cores, -(-rows // ROWS_PER_SHUFFLE_PARTITION))
    session.conf.set("spark.sql.shuffle.partitions", str(n))
    return n


ROWS_PER_SHUFFLE_PARTITION = 2_000_000
CODEGEN_CACHE = 4000


# The local driver's JIT inlines less deeply than HotSpot's defaults (15 levels, 325-byte hot
# methods, 2,500-byte callers). A check set runs some 400 generated classes, and on a two-core
# machine the JIT's compiler threads take their CPU from the tasks: the first 1M-event check set
# spent 39-45 s of its 67-78 s of JVM CPU compiling. With these limits, alternately one process each
# (docs/scaling.md, 2026-11-28): compiling 26-31 s, the first pass 29.2-34.5 s against 34.5-39.8 s,
# the next two 5-10% faster too. As defaults, so a user's spark.driver.extraJavaOptions still win.
DRIVER_JIT_OPTIONS = "-XX:MaxInlineLevel=6 -XX:FreqInlineSize=100 -XX:InlineSmallCode=1000"

# the session's SQL settings, set on a local session and on a Spark Connect one alike
SQL_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.join.preferSortMergeJoin": "false",  # a hash join sorts neither side
    # measured (benchmarks/checker_throughput.py, docs/scaling.md): adaptive execution re-plans at
    # every shuffle, a job and a plan each, and costs more than its coalescing saves across a dozen
    # small-output checks; shuffles are sized up front (size_shuffles)
    "spark.sql.adaptive.enabled": "false",
    # the cached tables (tables.py `kept`) stored uncompressed: compressing them cost more than all
    # their reads (10M events, alternately in one process: the check set 69.6-71.4 s against
    # 79.5-82.8 s; the table of sends cached in 13-16 s against 22-27 s). They take 1.6 times the
    # memory (0.8 GB against 0.5 GB at 10M events) and spill to disk as a compressed cache would
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
}


def _build(builder: Any) -> Any:
    builder = (builder.appName("chaoskit-check")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
               # a check set compiles a few hundred stages; Spark keeps 100 compiled classes by
               # default, so every check set compiled them all again
               .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE))
               .config("spark.driver.memory", driver_memory())
               .config("spark.driver.defaultJavaOptions", DRIVER_JIT_OPTIONS)
               # pyspark records the Python call site of every DataFrame call for error messages:
               # four JVM round trips a call, a third of the time a check set spends building its
               # plans (measured at 10k events: the check set 1.5-2.5 s faster without)
               .config("spark.python.sql.dataFrameDebugging.enabled", "false"))
    for key, value in SQL_SETTINGS.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def stop() -> None:
    global _session, _master
    with _lock:
        if _session is not None:
            _session.stop()
        _session, _master = None, None
