"""Real ZooKeeper nodes from the Debian package, one or a quorum of three.

The JVM runs directly with the package's jars (/usr/share/java/zookeeper.jar, whose manifest lists
its dependencies) and a generated zoo.cfg: its own dataDir, a free client port on 127.0.0.1, the
admin server off (it would grab port 8080) and the four-letter words the readiness check uses.
A node is ready when `srvr` answers with a mode (standalone, leader or follower), which in a
quorum means it has joined one.

    from chaoskit.cluster.zookeeper import ZooKeeperEnsemble
    with ZooKeeperEnsemble(size=1, run_id="r1", workdir=tmp_path) as zk:
        zk.connect_string            # "127.0.0.1:41234"
        zk.nodes[0].kill()           # kill -9; .start(clean=False) brings it back with its data
"""
from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from chaoskit.cluster.node import Lifecycle, Node
from chaoskit.cluster.waiting import NotReady, free_port

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# ZooKeeper logs through slf4j; the simple binding writes to stderr, which the node sends to its log.
SLF4J_BINDING = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
FOUR_LETTER_WORDS = "ruok,srvr,stat,mntr,conf"
ADDRESS_IN_USE = "Address already in use"


class ZooKeeperMissing(Exception):
    """Java or the zookeeper package is not installed."""


def java_command() -> str:
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperMissing("no `java` on PATH: install a JRE (apt-get install default-jre-headless)")
    for jar in (ZOOKEEPER_JAR, SLF4J_BINDING):
        if not jar.exists():
            raise ZooKeeperMissing(f"{jar} is missing: install the Debian packages zookeeper and "
                                   "libslf4j-java (apt-get install zookeeper)")
    return java


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    """Send one of ZooKeeper's four-letter commands and return the whole answer."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def zoo_cfg(data_dir: str, client_port: int, client_host: str, servers: dict[int, str],
            settings: dict[str, str] | None = None) -> str:
    """zoo.cfg text; `servers` maps each quorum member's id to "host:quorum_port:election_port"
    (empty for a standalone node). Shared by the local and the docker backend."""
    cfg = {
        "tickTime": "500",  # lets clients ask for sessions from 1 s (2 ticks) up to maxSessionTimeout
        "initLimit": "40",
        "syncLimit": "10",
        "minSessionTimeout": "1000",
        "maxSessionTimeout": "60000",
        "dataDir": data_dir,
        "clientPort": str(client_port),
        "clientPortAddress": client_host,
        "admin.enableServer": "false",
        "4lw.commands.whitelist": FOUR_LETTER_WORDS,
        "maxClientCnxns": "0",
        "snapCount": "10000",
        "autopurge.purgeInterval": "0",
    }
    if servers:
        cfg["standaloneEnabled"] = "false"
        for nid, address in sorted(servers.items()):
            cfg[f"server.{nid}"] = address
    cfg.update(settings or {})
    return "".join(f"{k}={v}\n" for k, v in cfg.items())


@dataclass(frozen=True)
class ZkPorts:
    client: int
    quorum: int
    election: int

    @classmethod
    def pick(cls) -> ZkPorts:
        return cls(free_port(), free_port(), free_port())


class ZooKeeperNode(Node):
    """One ZooKeeper server. In a quorum, `peers` holds every member's ports (itself included)."""

    role = "zookeeper"
    ready_timeout = 60.0

    def __init__(self, node_id: int, run_id: str, workdir: Path, ports: ZkPorts,
                 peers: dict[int, ZkPorts] | None = None, host: str = "127.0.0.1",
                 heap_mb: int = 256, settings: dict[str, str] | None = None) -> None:
        super().__init__(f"zookeeper-{node_id}", run_id, workdir)
        self.node_id, self.ports, self.host = node_id, ports, host
        self.peers = peers or {}
        self.heap_mb = heap_mb
        self.settings = settings or {}
        self.data_dir = self.workdir / self.name / "data"
        self.config_path = self.workdir / self.name / "zoo.cfg"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.ports.client}"

    def config_text(self) -> str:
        servers = {nid: f"{self.host}:{p.quorum}:{p.election}" for nid, p in self.peers.items()} \
            if len(self.peers) > 1 else {}
        return zoo_cfg(str(self.data_dir), self.ports.client, self.host, servers, self.settings)

    def prepare(self, clean: bool) -> None:
        if clean and self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if len(self.peers) > 1:
            (self.data_dir / "myid").write_text(f"{self.node_id}\n")
        self.config_path.write_text(self.config_text())

    def command(self) -> list[str]:
        return [
            java_command(), f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            # the run id in the arguments too, so `ps` shows which run a JVM belongs to
            f"-Dchaoskit.run.id={self.run_id}", f"-Dchaoskit.node={self.name}",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-cp", f"{ZOOKEEPER_JAR}:{SLF4J_BINDING}", MAIN_CLASS, str(self.config_path),
        ]

    def mode(self) -> str | None:
        """standalone, leader or follower while serving; None when not (yet) serving."""
        try:
            answer = four_letter_word(self.host, self.ports.client, "srvr")
        except OSError:
            return None
        for line in answer.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def is_ready(self) -> bool:
        return self.mode() is not None

    def address_in_use(self) -> bool:
        try:
            return ADDRESS_IN_USE in self.log_path.read_text(errors="replace")
        except OSError:
            return False

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "id": self.node_id, "address": self.address,
                "ports": {"client": self.ports.client, "quorum": self.ports.quorum,
                          "election": self.ports.election}}


class ZooKeeperEnsemble(Lifecycle):
    """1 or 3 (any odd number of) ZooKeeper nodes started together, with ports chosen free."""

    def __init__(self, size: int = 1, run_id: str = "zk", workdir: Path | str = ".",
                 host: str = "127.0.0.1", settings: dict[str, str] | None = None,
                 attempts: int = 3) -> None:
        if size < 1:
            raise ValueError(f"a ZooKeeper ensemble needs at least 1 node, got {size}")
        self.size, self.run_id, self.workdir, self.host = size, run_id, Path(workdir), host
        self.settings, self.attempts = settings, attempts
        self.nodes: list[ZooKeeperNode] = []

    @property
    def connect_string(self) -> str:
        return ",".join(n.address for n in self.nodes)

    def _make_nodes(self) -> list[ZooKeeperNode]:
        ports = {i: ZkPorts.pick() for i in range(1, self.size + 1)}
        peers = ports if self.size > 1 else {}
        return [ZooKeeperNode(i, self.run_id, self.workdir, p, peers, self.host, settings=self.settings)
                for i, p in ports.items()]

    def start(self, timeout: float = 60.0) -> None:
        java_command()  # fail with a clear message before spawning anything
        for attempt in range(1, self.attempts + 1):
            self.nodes = self._make_nodes()
            try:
                for node in self.nodes:
                    node.start(clean=True, wait=False)
                for node in self.nodes:
                    node.wait_ready(timeout)
                return
            except NotReady:
                clash = any(n.address_in_use() for n in self.nodes)
                self.stop()
                if not clash or attempt == self.attempts:
                    raise
                # another process took a port between our pick and ZooKeeper's bind: pick again

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()

    def leader(self) -> ZooKeeperNode | None:
        return next((n for n in self.nodes if n.running and n.mode() in ("leader", "standalone")), None)
