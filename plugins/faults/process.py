"""Process faults: kill -9 and restart, pause (SIGSTOP, or `docker pause` on the docker backend)
and resume, graceful restart. The target is any node (broker, controller, ZooKeeper); each
window restarts or resumes its node at its end, keeping the node's data (a crash, not a wipe).

Params: `restart` (kill: start again at the window's end, default true), `wait` (wait for the
node to be ready again before the stop op completes, default true: the heal is then determinate).
"""
from __future__ import annotations

from typing import Any, Mapping

from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit.nemesis.resolve import CLIENT


class _NodeFault(WindowedFault):
    allowed = {"wait"}

    def _node(self, target: str, pick: int) -> Any:
        name = self.context.resolve(target, pick)
        if name == CLIENT:
            raise ValueError(f"{self.name}: target {target!r} names the clients; {self.name} acts on cluster nodes")
        return self.context.node(name)

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, self.allowed)
        node = self._node(target, pick)
        self.act(node)
        return {"node": node.name, "pid": node.pid, "params": dict(params)}

    def stop(self, state: dict[str, Any]) -> dict[str, Any]:
        node = self.context.node(state["node"])
        self.undo(node, state["params"])
        return {**state, "pid_after": node.pid}

    def act(self, node: Any) -> None:
        raise NotImplementedError

    def undo(self, node: Any, params: Mapping[str, Any]) -> None:
        raise NotImplementedError


class KillFault(_NodeFault):
    name = "kill"
    allowed = {"wait", "restart"}

    def act(self, node: Any) -> None:
        node.kill()

    def undo(self, node: Any, params: Mapping[str, Any]) -> None:
        if params.get("restart", True) and not node.running:
            node.start(clean=False, wait=params.get("wait", True))


class RestartFault(KillFault):
    """A graceful stop (SIGTERM, the node shuts down cleanly) and a start at the window's end."""

    name = "restart"

    def act(self, node: Any) -> None:
        node.stop()


class PauseFault(_NodeFault):
    name = "pause"

    def act(self, node: Any) -> None:
        node.pause()

    def undo(self, node: Any, params: Mapping[str, Any]) -> None:
        if node.running:
            node.resume()
