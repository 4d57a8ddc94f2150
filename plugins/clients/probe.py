"""The `probe` client: asks one broker FindCoordinator for a group (the coordinator-probe workload).

It talks to the broker's client address (through its fault proxy), so a cut or paused broker gives
an `info` answer, never a made-up one. An answer with an error code is `fail`: nothing was claimed.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import FindCoordinatorRequest

from chaoskit.protocol.wire_client import WireClient
from chaoskit_plugins.clients.ops import ClientBase, Op, failed, ok

TIMEOUT_S = 5.0


class ProbeClient(ClientBase):
    name = "probe"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._wire: dict[int, WireClient] = {}

    def invoke(self, test: Any, op: Op) -> Op:
        if op["f"] != "coordinator":
            raise ValueError(f"probe client: no op {op['f']!r} (it does coordinator)")
        broker, group = op["node"], op["value"]["group"]
        try:
            answer = self._client(test, broker).request(FindCoordinatorRequest(key=group, key_type=0), 1)
        except Exception as e:  # noqa: BLE001 -- a dead connection: we do not know what it would say
            self._drop(broker)
            return failed(op, e, definite=False)
        if answer.error_code != 0:
            return {**op, "type": "fail", "error": f"FindCoordinator error {answer.error_code}"}
        return ok(op, value={"group": group, "node": answer.node_id, "asked": broker})

    def _client(self, test: Any, broker: int) -> WireClient:
        if broker not in self._wire:
            host, port = test.cluster.client_address(broker)
            self._wire[broker] = WireClient(host, port, timeout=TIMEOUT_S).__enter__()
        return self._wire[broker]

    def _drop(self, broker: int) -> None:
        wire = self._wire.pop(broker, None)
        if wire is not None:
            try:
                wire.close()
            except Exception:  # noqa: BLE001 -- already broken
                pass

    def close(self, test: Any) -> None:
        for broker in list(self._wire):
            self._drop(broker)
