"""tansu, an Apache-Kafka-compatible broker written in Rust, pinned to one version: chaoskit tests a
broker it did not write.

tansu's brokers are stateless over a storage engine: SQLite (one broker per file), PostgreSQL
(several brokers over one database) or memory (gone when the broker stops). It has none of the
proposals, no ZooKeeper and no controllers apart from its brokers, so it declares no capability
beyond the Kafka core: the generic suites run on it, the proposals' suites are skipped with the
reason. `make tansu` builds it once per machine into the user's cache folder
(`$XDG_CACHE_HOME/chaoskit/tansu-<version>`, or `CHAOSKIT_TANSU_HOME`).
"""
from __future__ import annotations

import os
from pathlib import Path


VERSION = "0.6.0"
FEATURES = "postgres,libsql,dynostore"
STORAGES = ("sqlite", "postgres", "memory")  # the default first
TITLE = f"tansu {VERSION}"


def home() -> Path:
    """Where `make tansu` puts the build: shared by every clone on the machine."""
    if os.environ.get("CHAOSKIT_TANSU_HOME"):
        return Path(os.environ["CHAOSKIT_TANSU_HOME"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "chaoskit" / f"tansu-{VERSION}"


def binary() -> Path:
    return home() / "bin" / "tansu"


def unavailable(storage: str | None = None) -> str | None:
    """None when the pinned build with every engine is here (and, for PostgreSQL, its server), else
    the one line that says what to do."""
    built = home() / "features"
    if not binary().is_file() or not built.is_file() or built.read_text().strip() != FEATURES:
        return f"{TITLE} is not built on this machine: run `make tansu` once (15-20 minutes on 2 cores)"
    if storage == "postgres":
        from chaoskit_plugins.brokers.postgres import PostgresMissing, server_bin

        try:
            server_bin()
        except PostgresMissing as e:
            return str(e)
    return None


def max_brokers(storage: str | None) -> int:
    """Several brokers share one PostgreSQL database; a SQLite file or a memory store serves one."""
    return 1 << 30 if storage == "postgres" else 1


def storage_url(storage: str, data_dir: Path, postgres: tuple[str, int] | None = None,
                database: str = "tansu") -> str:
    """The `--storage-engine` URL of one engine. A SQLite path is given relative to the broker's
    working folder (tansu doubles an absolute one: `sqlite:///abs` reads as `//abs` under its own
    folder), so the broker runs in `data_dir`."""
    if storage == "sqlite":
        return "sqlite://tansu.db"
    if storage == "memory":
        return "memory://tansu/"
    if storage == "postgres":
        if postgres is None:
            raise ValueError("a PostgreSQL engine needs the server's address (host, port)")
        host, port = postgres
        return f"postgres://postgres:postgres@{host}:{port}/{database}"
    raise ValueError(f"{TITLE} runs on {', '.join(STORAGES)}, not {storage!r}")


def command(listen: tuple[str, int], advertised: tuple[str, int], storage: str, cluster_id: str,
            exe: Path | None = None) -> list[str]:
    """One broker's command line: it listens on `listen` and tells clients to come to `advertised`
    (its proxy, so that every client connection crosses a fault)."""
    return [str(exe or binary()), "broker",
            "--listener-url", f"tcp://{listen[0]}:{listen[1]}",
            "--advertised-listener-url", f"tcp://{advertised[0]}:{advertised[1]}",
            "--storage-engine", storage,
            "--cluster-id", cluster_id]

