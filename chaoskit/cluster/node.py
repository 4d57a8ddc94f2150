"""One process of a cluster (ZooKeeper, controller, broker) and the abilities a node may have.

`Node` owns the life cycle every role shares: `start()` cleans then starts and waits for a
readiness condition (the node's log attached on a timeout), `stop()` asks politely then kills,
`kill()` is kill -9, `pause()`/`resume()` are SIGSTOP/SIGCONT. Every process is labelled with the
run id through the CHAOSKIT_RUN_ID environment variable (and its arguments), which is what the
reaper looks for. Subclasses say how to prepare the node's files, its command line and when it
is ready.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol, TypeVar, runtime_checkable

from chaoskit.cluster.waiting import NotReady, wait_for

RUN_ID_ENV = "CHAOSKIT_RUN_ID"
NODE_ENV = "CHAOSKIT_NODE"
_L = TypeVar("_L", bound="Lifecycle")


@runtime_checkable
class Killable(Protocol):
    """A node that can die abruptly and come back."""

    def kill(self) -> None:
        """kill -9: no cleanup, no goodbye."""

    def start(self, clean: bool = True, wait: bool = True) -> None:
        """Start (again); `clean=False` keeps the node's data, as after a crash."""


@runtime_checkable
class Pausable(Protocol):
    """A node that can be frozen (a GC pause, a hung VM) and thawed."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


@runtime_checkable
class HasLogs(Protocol):
    """A node whose log the runner can collect and attach to reports."""

    @property
    def log_path(self) -> Path: ...


class Lifecycle:
    """`with x:` starts x and stops it on the way out, and also when starting fails half way
    (whatever did start is stopped). Subclasses give start() and stop()."""

    def start(self) -> Any:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self: _L) -> _L:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class NodeError(Exception):
    """A node was used in a state that does not allow it (start while running, pause while stopped)."""


class Node(Lifecycle):
    """A child process with a name, a role, a run id, a log file and a readiness condition."""

    role = "node"
    ready_timeout = 30.0
    # Python nodes print "READY {json}" on stdout; the node reads stdout to catch it.
    reads_ready_line = False

    def __init__(self, name: str, run_id: str, workdir: Path) -> None:
        self.name, self.run_id = name, run_id
        self.workdir = Path(workdir)
        self._log_path = self.workdir / f"{name}.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._paused = False
        self.ready_info: dict[str, Any] | None = None
        self._reader: threading.Thread | None = None

    # --- what subclasses provide -------------------------------------------------------------
    def command(self) -> list[str]:
        raise NotImplementedError

    def prepare(self, clean: bool) -> None:
        """Write config files; with `clean`, wipe whatever a previous run left in the node's dirs."""

    @property
    def run_in(self) -> Path:
        """The process's working folder (the run's, unless the node keeps files of its own there)."""
        return self.workdir

    def is_ready(self) -> bool:
        """The readiness condition; by default the READY line."""
        return self.ready_info is not None

    # --- life cycle ---------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self._log_path

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def paused(self) -> bool:
        return self._paused and self.running

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env[RUN_ID_ENV] = self.run_id
        env[NODE_ENV] = self.name
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def start(self, clean: bool = True, wait: bool = True) -> None:
        if self.running:
            raise NodeError(f"{self.name} is already running (pid {self.pid}); stop or kill it first")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.prepare(clean)
        self.ready_info, self._paused = None, False
        with open(self._log_path, "ab") as log:
            log.write(f"=== chaoskit: starting {self.name} at {time.strftime('%H:%M:%S')}: "
                      f"{' '.join(self.command())}\n".encode())
            log.flush()
            stdout: int | IO[bytes] = subprocess.PIPE if self.reads_ready_line else log
            # A session of its own: a Ctrl-C meant for the runner does not reach the node directly
            # (the runner tears down in order), and SIGSTOP hits exactly this process.
            self._proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=stdout,
                                          stderr=log, env=self.env(), cwd=self.run_in,
                                          start_new_session=True)
        if self.reads_ready_line:
            self._reader = threading.Thread(target=self._read_stdout, args=(self._proc,),
                                            name=f"{self.name}-stdout", daemon=True)
            self._reader.start()
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float | None = None) -> None:
        wait_for(self.is_ready, self.ready_timeout if timeout is None else timeout,
                 f"{self.role} {self.name} (pid {self.pid}) did not become ready", self._log_path,
                 abort=self._exit_reason)

    def _exit_reason(self) -> str | None:
        if self._proc is not None and self._proc.poll() is not None:
            return f"the process exited with code {self._proc.returncode}"
        return None

    def _read_stdout(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        with open(self._log_path, "ab", buffering=0) as log:
            for raw in proc.stdout:
                log.write(raw)
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith("READY ") and proc is self._proc:
                    try:
                        self.ready_info = json.loads(line[len("READY "):])
                    except ValueError:
                        log.write(b"chaoskit: the READY line is not JSON\n")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if the process is still there after `timeout`."""
        if not self.running:
            return
        assert self._proc is not None
        if self._paused:
            self.resume()  # a stopped process would only act on SIGTERM once continued
        self._proc.terminate()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._join_reader()

    def kill(self) -> None:
        if not self.running:
            return
        assert self._proc is not None
        self._proc.kill()
        self._proc.wait()
        self._paused = False
        self._join_reader()

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)
        self._paused = True

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self._paused = False

    def _signal(self, sig: signal.Signals) -> None:
        if not self.running:
            raise NodeError(f"{self.name} is not running; cannot send {sig.name}")
        assert self._proc is not None
        self._proc.send_signal(sig)

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "pid": self.pid, "log": str(self._log_path)}

    def __repr__(self) -> str:
        state = "paused" if self.paused else "running" if self.running else "stopped"
        return f"<{type(self).__name__} {self.name} {state} pid={self.pid}>"


def stop_each(nodes: list[Node], log: Any) -> None:
    """Stop every node in turn; one that fails to stop is logged and the rest still stop."""
    for node in nodes:
        try:
            node.stop()
        except Exception as e:  # noqa: BLE001 -- keep stopping the rest
            log.error("stopping %s: %r", node.name, e)


__all__ = ["Lifecycle", "Node", "NodeError", "NotReady", "Killable", "Pausable", "HasLogs", "RUN_ID_ENV", "NODE_ENV", "stop_each"]
