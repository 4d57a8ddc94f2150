"""The roles a chaos test is made of, as small protocols, with no-op implementations.

As in Jepsen: a *Client* turns an op into a call on the system and returns the op completed
(`ok`, `fail` only when the error proves nothing happened, `info` when the outcome is unknown);
a *Generator* says, purely from its seed, what each worker process does next. The Nemesis and
Checker roles live in chaoskit.nemesis.protocol and chaoskit.checkers.protocol.

Worker processes are numbered from 0; a workload names which process plays which part
(`producer`, `consumer`), and each process has its own Client, opened from the test's factory.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

Op = dict[str, Any]


class _Pending:
    """Nothing to do right now; ask again shortly (Jepsen's :pending)."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING = _Pending()


@runtime_checkable
class Client(Protocol):
    def open(self, test: Any, process: int) -> Client:
        """A client for one worker process (a fresh connection, not yet used)."""

    def setup(self, test: Any) -> None:
        """Once per run before the workload starts, on one client (e.g. create topics)."""

    def invoke(self, test: Any, op: Op) -> Op:
        """Perform `op` (type invoke) and return it completed: type ok, fail or info.
        Raising means the outcome is unknown; the runner records it as info with the error."""

    def teardown(self, test: Any) -> None:
        """Once per run after the workload, on one client."""

    def close(self, test: Any) -> None:
        """Release this process's connections; called once per opened client, however the run ended."""


@runtime_checkable
class Generator(Protocol):
    def op(self, process: int, elapsed_s: float) -> Op | _Pending | None:
        """The next op for `process` at `elapsed_s` into the run, PENDING (ask again soon) or
        None (this process is done). The same seed and the same sequence of calls for a
        process give the same ops, whatever other processes do."""


class NoopClient:
    """Does nothing and succeeds: for dry runs of a workload and the runner's own tests."""

    def open(self, test: Any, process: int) -> NoopClient:
        return self

    def setup(self, test: Any) -> None:
        pass

    def invoke(self, test: Any, op: Op) -> Op:
        return {**op, "type": "ok"}

    def teardown(self, test: Any) -> None:
        pass

    def close(self, test: Any) -> None:
        pass
