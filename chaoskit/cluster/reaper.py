"""The reaper: `python -m chaoskit.cluster.reaper --run-id ID --parent-pid PID`.

A small watchdog the local backend starts beside its cluster (testcontainers' Ryuk, for
processes). It waits for the parent (the runner) to die, however it dies, kill -9 included, then
kills every process labelled with the run id (the CHAOSKIT_RUN_ID environment variable), so
nothing of a run outlives it. A SIGTERM (the runner stopping cleanly) reaps at once and exits.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from chaoskit.cluster.node import RUN_ID_ENV

POLL_S = 0.1


def run_processes(run_id: str, exclude: set[int] | None = None) -> list[psutil.Process]:
    """Every process (of this user) whose environment carries CHAOSKIT_RUN_ID=run_id."""
    skip = (exclude or set()) | {psutil.Process().pid}
    found = []
    for proc in psutil.process_iter():
        if proc.pid in skip:
            continue
        try:
            if proc.environ().get(RUN_ID_ENV) == run_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def reap(run_id: str, exclude: set[int] | None = None, rounds: int = 5) -> int:
    """kill -9 every process of the run (several rounds, in case one was starting); how many."""
    killed = 0
    for _ in range(rounds):
        procs = run_processes(run_id, exclude)
        if not procs:
            break
        for proc in procs:
            try:
                proc.kill()
                killed += 1
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(procs, timeout=2)
    return killed


def parent_alive(parent: psutil.Process) -> bool:
    try:
        return parent.is_running() and parent.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_parent(parent_pid: int) -> bool:
    """Until the parent is gone or this process gets SIGTERM; True when it was the SIGTERM."""
    try:
        parent: psutil.Process | None = psutil.Process(parent_pid)
    except psutil.NoSuchProcess:
        parent = None
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C for the runner is not for us
    while parent is not None and parent_alive(parent) and not stop["now"]:
        time.sleep(POLL_S)
    return stop["now"]


def watch(run_id: str, parent_pid: int) -> int:
    wait_parent(parent_pid)
    killed = reap(run_id, exclude={parent_pid})
    if killed:
        print(f"chaoskit reaper: run {run_id}: killed {killed} process(es) left behind", file=sys.stderr)
    return 0


def parser(module: str, description: str) -> argparse.ArgumentParser:
    """The command line every reaper takes: --run-id and --parent-pid."""
    p = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    p.add_argument("--run-id", required=True)
    p.add_argument("--parent-pid", type=int, required=True)
    return p


def spawn(module: str, run_id: str, log_path: Path, *extra: str) -> subprocess.Popen[bytes]:
    """Start reaper `module` for this process, detached (a session of its own, so the signal that
    kills the runner's group spares it) and outside the run (no CHAOSKIT_RUN_ID)."""
    env = {k: v for k, v in os.environ.items() if k != RUN_ID_ENV}
    with open(log_path, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", module, "--run-id", run_id, "--parent-pid", str(os.getpid()),
                                 *extra], stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                start_new_session=True)


def terminate(proc: subprocess.Popen[bytes] | None, timeout: float = 15.0) -> None:
    """Ask a reaper to reap now and exit (SIGTERM), killing it if it takes longer than `timeout`."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    args = parser("chaoskit.cluster.reaper", "Kill a run's processes once its parent is gone.").parse_args(argv)
    return watch(args.run_id, args.parent_pid)


if __name__ == "__main__":
    sys.exit(main())
