"""`ProxyServer`: our fault proxy (chaoskit.proxy) as a child process (`python -m chaoskit.proxy`).

It is a cluster Node (chaoskit.cluster.node), beside BrokerNode and ControllerNode: labelled with
the run id, its log in the workdir, `stop()` asks with SIGTERM then kills. By default it asks for
port 0 and learns the port from the READY line, so two runs never fight over a port; it is ready
when GET /version answers. A start that fails (a port in use, a bad config) raises NotReady with
the tail of its log.

    with ProxyServer(run_id="r1", workdir=tmp_path, seed=7) as server:
        client = server.client()
        client.create_proxy("b1", upstream="127.0.0.1:9092")
"""
from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

from chaoskit.cluster.node import Node
from chaoskit.proxy.client import ToxiproxyClient


class ProxyServer(Node):
    role = "proxy"
    reads_ready_line = True
    ready_timeout = 20.0

    def __init__(self, run_id: str, workdir: Path, name: str = "toxiproxy", host: str = "127.0.0.1",
                 port: int = 0, seed: int = 0, proxies: list[dict] | None = None,
                 log_level: str = "INFO") -> None:
        super().__init__(name, run_id, workdir)
        self.host, self.port, self.seed, self.proxies, self.log_level = host, port, seed, proxies, log_level
        self.config_path = self.workdir / f"{name}-proxies.json"

    @property
    def url(self) -> str:
        """The API's base URL (known once the server printed its READY line)."""
        if self.ready_info is None:
            raise RuntimeError(f"{self.name} has not started; call start() first")
        return str(self.ready_info["api"])

    def client(self, timeout: float = 10.0) -> ToxiproxyClient:
        return ToxiproxyClient(self.url, timeout=timeout)

    def prepare(self, clean: bool) -> None:
        if self.proxies is not None:
            self.config_path.write_text(json.dumps(self.proxies, indent=2))

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "chaoskit.proxy", "--host", self.host, "--port", str(self.port),
               "--seed", str(self.seed), "--log-level", self.log_level, "--run-id", self.run_id]
        if self.proxies is not None:
            cmd += ["--config", str(self.config_path)]
        return cmd

    def is_ready(self) -> bool:
        if self.ready_info is None:
            return False
        with urllib.request.urlopen(f"{self.url}/version", timeout=2) as answer:
            return answer.status == 200

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "url": self.ready_info["api"] if self.ready_info else None, "seed": self.seed}


class ProxyRouting:
    """What a cluster whose every path goes through a fault proxy shares (the local cluster, tansu's):
    our proxy server started for the run (or the spec's own `proxy_url`), a ProxiedRouter over it,
    and its API. Needs `spec`, `run_id`, `run_dir`, and sets `proxy`, `proxy_url` and `router`."""

    spec: Any
    run_id: str
    run_dir: Path
    proxy: ProxyServer | None
    proxy_url: str | None
    router: Any

    def _start_proxies(self) -> None:
        from chaoskit.cluster.topology import ProxiedRouter

        if self.spec.proxy_url is None:
            self.proxy = ProxyServer(self.run_id, self.run_dir, host=self.spec.host, seed=self.spec.seed)
            self.proxy.start()
            self.proxy_url = self.proxy.url
        else:
            self.proxy_url = self.spec.proxy_url
        client = ToxiproxyClient(self.proxy_url)
        client.delete_all()  # a reused Toxiproxy may hold a previous run's links
        self.router = ProxiedRouter(client, self.spec.host)

    def _describe_proxies(self) -> dict[str, Any]:
        from chaoskit.cluster.topology import ProxiedRouter

        if not isinstance(self.router, ProxiedRouter):
            return {}
        return {"proxy": {"api": self.proxy_url, "links": self.router.describe()}}

    @property
    def proxies(self) -> ToxiproxyClient:
        """The Toxiproxy API of a proxied cluster."""
        if self.proxy_url is None:
            raise RuntimeError("this cluster is not proxied; start it with ClusterSpec(proxied=True)")
        return ToxiproxyClient(self.proxy_url)
