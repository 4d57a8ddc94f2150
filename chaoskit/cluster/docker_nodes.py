"""One container of a docker-backend cluster, with the abilities of a local node.

`ContainerNode` gives a container the life cycle of chaoskit.cluster.node.Node: `start(clean)`
(clean: a new container; not clean: the same container started again, its filesystem and so its
data kept, as after a crash), `stop()` (the engine's stop: SIGTERM, then SIGKILL), `kill()` (the
engine's kill, SIGKILL), `pause()`/`resume()` (`docker pause`/`unpause`: the cgroup freezer),
and `log_path`, a file kept equal to the container's log (and the logs of the containers it
replaced). Every container is labelled chaoskit.run=<id> for the reaper, runs as an unprivileged
uid with every capability dropped: none of chaoskit's faults needs one (network faults go through
the fault proxy, pauses through the engine).
"""
from __future__ import annotations

import io
import json
import tarfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaoskit.cluster.node import Lifecycle, NodeError
from chaoskit.cluster.waiting import wait_for
from chaoskit.cluster.zookeeper import four_letter_word

RUN_LABEL = "chaoskit.run"
NODE_LABEL = "chaoskit.node"
LOOPBACK = "127.0.0.1"
HOME = "/home/chaoskit"
UID = 10001


def container_name(run_id: str, name: str) -> str:
    return f"chaoskit-{run_id}-{name}"


class ContainerNode(Lifecycle):
    """A node as a container on the run's network, reachable there by its name."""

    role = "node"
    ready_timeout = 60.0
    container_ports: tuple[int, ...] = ()  # published to 127.0.0.1 for the test process

    def __init__(self, name: str, cluster: Any, image: str) -> None:
        self.name, self.cluster, self.image = name, cluster, image
        self.run_id = cluster.run_id
        self._log_path = Path(cluster.run_dir) / f"{name}.log"
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        self._earlier_logs = ""  # logs of containers this node had before a clean start
        self._container: Any = None
        self._ready_lines_before = 0
        self.ready_info: dict[str, Any] | None = None
        self.published: dict[int, int] = {}  # container port -> host port on 127.0.0.1
        self._lock = threading.Lock()

    # --- what subclasses provide -------------------------------------------------------------
    def command(self) -> list[str] | None:
        return None

    def environment(self) -> dict[str, str]:
        return {}

    def config(self) -> dict[str, Any] | None:
        """A JSON config written to ~/node.json before each start (None: no config file)."""
        return None

    def is_ready(self) -> bool:
        return self.ready_info is not None

    # --- the container -----------------------------------------------------------------------
    @property
    def container_name(self) -> str:
        return container_name(self.run_id, self.name)

    def _status(self) -> str | None:
        if self._container is None:
            return None
        try:
            self._container.reload()
        except Exception:  # removed behind our back (the reaper, a user): not running
            return None
        return str(self._container.status)

    @property
    def running(self) -> bool:
        return self._status() in ("running", "paused", "restarting")

    @property
    def paused(self) -> bool:
        return self._status() == "paused"

    @property
    def pid(self) -> int | None:
        """The host pid of the container's main process while it runs."""
        if not self.running:
            return None
        return int(self._container.attrs["State"]["Pid"]) or None

    def _create(self) -> None:
        client = self.cluster.client
        for port in self.container_ports:
            self.published.setdefault(port, self.cluster.free_port())
        self._container = client.containers.create(
            self.image, command=self.command(), name=self.container_name, hostname=self.name,
            environment={"CHAOSKIT_RUN_ID": self.run_id, "CHAOSKIT_NODE": self.name, **self.environment()},
            labels={RUN_LABEL: self.run_id, NODE_LABEL: self.name},
            ports={f"{p}/tcp": (LOOPBACK, hp) for p, hp in self.published.items()},
            network=self.cluster.network_name, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            user=f"{UID}:{UID}", init=False, detach=True)
        # the node's name is its address on the run network
        self.cluster.network.disconnect(self._container)
        self.cluster.network.connect(self._container, aliases=[self.name])

    def _remove(self) -> None:
        if self._container is None:
            return
        self._earlier_logs = self._read_logs()
        try:
            self._container.remove(force=True)
        except Exception:
            pass
        self._container = None

    def _write_config(self) -> None:
        config = self.config()
        if config is None:
            return
        data = (json.dumps(config, indent=1, sort_keys=True) + "\n").encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo("node.json")
            info.size, info.uid, info.gid, info.mode, info.mtime = len(data), UID, UID, 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        self._container.put_archive(HOME, buf.getvalue())

    def start(self, clean: bool = True, wait: bool = True) -> None:
        if self.running:
            raise NodeError(f"{self.name} is already running ({self.container_name}); stop or kill it first")
        with self._lock:
            if clean:
                self._remove()
            if self._container is None:
                self._create()
            self._write_config()
            self._ready_lines_before = self._ready_lines()
            self.ready_info = None
            self._container.start()
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float | None = None) -> None:
        wait_for(self._poll_ready, self.ready_timeout if timeout is None else timeout,
                 f"{self.role} {self.name} (container {self.container_name}) did not become ready",
                 self._log_path, interval=0.1, abort=self._exit_reason)

    def _poll_ready(self) -> bool:
        """Readiness, keeping log_path current so a timeout attaches the container's latest log."""
        text = self._read_logs()
        self._log_path.write_text(self._earlier_logs + text)
        lines = [l for l in text.splitlines() if l.startswith("READY ")]
        if len(lines) > self._ready_lines_before and self.ready_info is None:
            self.ready_info = json.loads(lines[-1][len("READY "):])
        return self.is_ready()

    def _exit_reason(self) -> str | None:
        status = self._status()
        if status in ("exited", "dead", None):
            self._poll_ready()  # the log as the container left it
            code = self._container.attrs["State"].get("ExitCode") if self._container is not None else None
            return f"the container is {status or 'gone'} (exit code {code})"
        return None

    def _ready_lines(self) -> int:
        return sum(1 for l in self._read_logs().splitlines() if l.startswith("READY "))

    def _read_logs(self) -> str:
        if self._container is None:
            return ""
        try:
            return self._container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        except Exception:
            return ""

    @property
    def log_path(self) -> Path:
        """A file holding the container's log so far (rewritten on each access)."""
        self._log_path.write_text(self._earlier_logs + self._read_logs())
        return self._log_path

    def stop(self, timeout: float = 10.0) -> None:
        if not self.running:
            return
        if self.paused:
            self._container.unpause()  # a frozen process would only act on SIGTERM once thawed
        self._container.stop(timeout=int(timeout))

    def kill(self) -> None:
        if not self.running:
            return
        if self.paused:
            self._container.unpause()
        self._container.kill(signal="SIGKILL")
        wait_for(lambda: not self.running, 10, f"{self.container_name} exiting after SIGKILL")

    def pause(self) -> None:
        if not self.running:
            raise NodeError(f"{self.name} is not running; cannot pause it")
        self._container.pause()

    def resume(self) -> None:
        if not self.running:
            raise NodeError(f"{self.name} is not running; cannot unpause it")
        if self.paused:
            self._container.unpause()

    def remove(self) -> None:
        """Stop and remove the container, keeping its log in log_path."""
        if self._container is not None:
            self.log_path  # noqa: B018 - writes the final log before the container goes
            self._remove()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "pid": self.pid, "log": str(self._log_path),
                "container": self.container_name, "image": self.image}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self._status() or 'absent'}>"


class DockerZooKeeper(ContainerNode):
    role = "zookeeper"
    container_ports = (2181,)

    def __init__(self, node_id: int, cluster: Any, image: str, zoo_cfg: str) -> None:
        super().__init__(f"zookeeper-{node_id}", cluster, image)
        self.node_id, self.zoo_cfg = node_id, zoo_cfg

    def environment(self) -> dict[str, str]:
        return {"ZOO_CFG": self.zoo_cfg, "ZK_MYID": str(self.node_id)}

    @property
    def address(self) -> str:
        """Where the test process reaches it."""
        return f"{LOOPBACK}:{self.published[2181]}"

    def mode(self) -> str | None:
        try:
            answer = four_letter_word(LOOPBACK, self.published[2181], "srvr")
        except (OSError, KeyError):
            return None
        return next((l.split(":", 1)[1].strip() for l in answer.splitlines() if l.startswith("Mode:")), None)

    def is_ready(self) -> bool:
        return self.mode() is not None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "id": self.node_id, "address": self.address,
                "internal": f"{self.name}:2181"}


class DockerPythonNode(ContainerNode):
    """`python -m <module> --config ~/node.json` in the node image; config built by the cluster."""

    module = ""

    def __init__(self, name: str, cluster: Any, image: str,
                 build_config: Callable[[DockerPythonNode], dict[str, Any]],
                 also_ready: Callable[[], bool] | None = None) -> None:
        super().__init__(name, cluster, image)
        self.build_config, self.also_ready = build_config, also_ready
        self.last_config: dict[str, Any] = {}

    def command(self) -> list[str]:
        return [self.module, "--config", f"{HOME}/node.json"]

    def config(self) -> dict[str, Any]:
        self.last_config = self.build_config(self)
        return self.last_config

    def is_ready(self) -> bool:
        return self.ready_info is not None and (self.also_ready is None or self.also_ready())


class DockerBroker(DockerPythonNode):
    role = "broker"
    module = "chaoskit.broker"
    PORT = 9092
    container_ports = (PORT,)

    def __init__(self, broker_id: int, cluster: Any, image: str,
                 build_config: Callable[[DockerPythonNode], dict[str, Any]],
                 also_ready: Callable[[], bool] | None = None) -> None:
        super().__init__(f"broker-{broker_id}", cluster, image, build_config, also_ready)
        self.broker_id = broker_id
        self.published[self.PORT] = cluster.free_port()

    @property
    def address(self) -> tuple[str, int]:
        """Where the test process reaches the broker itself (its published port, no proxy)."""
        return (LOOPBACK, self.published[self.PORT])

    @property
    def internal_address(self) -> tuple[str, int]:
        """Where containers on the run network reach it."""
        return (self.name, self.PORT)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "id": self.broker_id, "address": "%s:%d" % self.address,
                "internal": "%s:%d" % self.internal_address,
                "advertised": self.last_config.get("advertised.listeners", "%s:%d" % self.address)}


class DockerController(DockerPythonNode):
    role = "controller"
    module = "chaoskit.controller"
    ready_timeout = 30.0

    def __init__(self, controller_id: int, cluster: Any, image: str,
                 build_config: Callable[[DockerPythonNode], dict[str, Any]]) -> None:
        super().__init__(f"controller-{controller_id}", cluster, image, build_config)
        self.controller_id = controller_id

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "id": self.controller_id}


class DockerProxy(ContainerNode):
    """The fault proxy in its own container: its API and the client-facing proxies published."""

    role = "proxy"
    API_PORT = 8474
    ready_timeout = 30.0

    def __init__(self, cluster: Any, image: str, seed: int, client_ports: tuple[int, ...]) -> None:
        super().__init__("toxiproxy", cluster, image)
        self.seed = seed
        self.container_ports = (self.API_PORT, *client_ports)

    def command(self) -> list[str]:
        return ["--host", "0.0.0.0", "--port", str(self.API_PORT), "--seed", str(self.seed),
                "--run-id", self.run_id]

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.published[self.API_PORT]}"

    def is_ready(self) -> bool:
        import urllib.request

        if self.ready_info is None:
            return False
        with urllib.request.urlopen(f"{self.url}/version", timeout=2) as answer:
            return bool(answer.status == 200)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "url": self.url, "seed": self.seed}
