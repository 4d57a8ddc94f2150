"""The Python nodes of a local cluster: `python -m chaoskit.broker` and `python -m chaoskit.controller`.

Each gets a JSON config file generated into its own directory under the run dir (rewritten on
every start, so a changed setting applies at the next restart), prints `READY {json}` when it
serves, and may have one more readiness condition (a broker registered in ZooKeeper).
"""
from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaoskit.cluster.node import Node
from chaoskit.cluster.waiting import NotReady, free_port

PORT_ATTEMPTS = 3


class ConfigNode(Node):
    """A `python -m <module> --config FILE` process whose config a callable builds."""

    module = ""
    reads_ready_line = True
    ready_timeout = 60.0

    def __init__(self, name: str, run_id: str, workdir: Path, build_config: Callable[[ConfigNode], dict[str, Any]],
                 also_ready: Callable[[], bool] | None = None) -> None:
        super().__init__(name, run_id, workdir)
        self.build_config = build_config
        self.also_ready = also_ready
        self.home = self.workdir / name
        self.config_path = self.home / f"{name}.json"
        self.config: dict[str, Any] = {}

    def prepare(self, clean: bool) -> None:
        data = self.home / "data"
        if clean and data.exists():
            shutil.rmtree(data)
        data.mkdir(parents=True, exist_ok=True)
        self.config = self.build_config(self)
        self.config_path.write_text(json.dumps(self.config, indent=1, sort_keys=True) + "\n")

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, "--config", str(self.config_path)]

    def is_ready(self) -> bool:
        return self.ready_info is not None and (self.also_ready is None or self.also_ready())

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "config": str(self.config_path)}


class RetriesTakenPort:
    """A node listening on a port picked free before it starts (`host`, `port`): on a first start a
    port taken meanwhile (its log says "address already in use") is picked again."""

    host: str
    port: int

    def start(self, clean: bool = True, wait: bool = True) -> None:
        for attempt in range(PORT_ATTEMPTS):
            try:
                super().start(clean, wait)  # type: ignore[misc]
                return
            except NotReady:
                in_use = "address already in use" in self.log_path.read_text(errors="replace").lower()  # type: ignore[attr-defined]
                self.stop()  # type: ignore[attr-defined]
                if not (clean and in_use) or attempt == PORT_ATTEMPTS - 1:
                    raise
                self.port = free_port(self.host)


class BrokerNode(RetriesTakenPort, ConfigNode):
    role = "broker"
    module = "chaoskit.broker"

    def __init__(self, broker_id: int, run_id: str, workdir: Path, host: str,
                 build_config: Callable[[ConfigNode], dict[str, Any]],
                 also_ready: Callable[[], bool] | None = None) -> None:
        super().__init__(f"broker-{broker_id}", run_id, workdir, build_config, also_ready)
        self.broker_id, self.host = broker_id, host
        self.port = free_port(host)
        self.data_dir = self.home / "data"

    @property
    def address(self) -> tuple[str, int]:
        """Where the broker listens (its real address, not a proxy's)."""
        return (self.host, self.port)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "id": self.broker_id, "address": "%s:%d" % self.address,
                "advertised": self.config.get("advertised.listeners", "%s:%d" % self.address),
                "data": str(self.data_dir)}


class ControllerNode(ConfigNode):
    role = "controller"
    module = "chaoskit.controller"
    ready_timeout = 30.0

    def __init__(self, controller_id: int, run_id: str, workdir: Path,
                 build_config: Callable[[ConfigNode], dict[str, Any]]) -> None:
        super().__init__(f"controller-{controller_id}", run_id, workdir, build_config)
        self.controller_id = controller_id

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "id": self.controller_id}
