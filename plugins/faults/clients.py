"""`clients`: the workload's own clients change what they do for a window (target `client`).

The faults of the cluster move leaders and partitions under the clients; this one moves the
clients: what a consumer was doing when a leader changed (reading, idle, gone) decides which
KIP-253 gate and which KIP-320 path it goes through. Params:

- `action`:
  - `idle`: the consumers' application stops consuming (their polls return nothing and the
    library is not asked) and wakes at the window's end;
  - `leave`: the consumers close (leaving the group and committing, as closing does) and rejoin at
    the window's end from the committed offsets; from the run's start, a group that joins late;
  - `restart`: the consumers close and start again at once from the committed offsets;
  - `stop-producers`: the producers stop and start again at the window's end (meanwhile the
    consumers poll a topic nobody writes to).
- `which`: `all` (default) or `one`, chosen with the window's `pick` among the clients that have
  consumed (or produced) so far, so a replay picks the same one.

`resolved` names the processes acted on.
"""
from __future__ import annotations

from typing import Any, Mapping

from chaoskit.nemesis.base import WindowedFault, check_params


def restartable(clients: list[Any]) -> list[Any]:
    """The clients that can be held and whose consumer can leave its group and come back."""
    return [c for c in clients if hasattr(c, "hold") and hasattr(c, "restart_consumer")]

ACTIONS = ("idle", "leave", "restart", "stop-producers")


class ClientsFault(WindowedFault):
    name = "clients"

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, {"action", "which"})
        action, which = params.get("action"), params.get("which", "all")
        if action not in ACTIONS:
            raise ValueError(f"clients: action {action!r} is not one of {', '.join(ACTIONS)}")
        if which not in ("all", "one"):
            raise ValueError(f"clients: which {which!r} is not all or one")
        chosen = self._chosen(action == "stop-producers", which, pick)
        for c in chosen:
            if action == "stop-producers":
                c.hold_sends()
            elif action == "restart":
                c.restart_consumer()
            else:
                c.hold()
                if action == "leave":
                    c.restart_consumer()  # closed now; the first poll after the release makes a new one
        return {"action": action, "processes": sorted(c.process for c in chosen)}

    def _chosen(self, producers: bool, which: str, pick: int) -> list[Any]:
        able = restartable(self.context.clients)
        role = [c for c in able if (c.produces if producers else c.consumes)] or able
        if which == "one" and role:
            return [sorted(role, key=lambda c: c.process)[pick % len(role)]]
        return role

    def stop(self, state: dict[str, Any]) -> None:
        acted = set(state["processes"])
        for c in self.context.clients:
            if getattr(c, "process", None) in acted:
                c.release_sends() if state["action"] == "stop-producers" else c.release()
