"""The ProxyServer process handle (our fault proxy as a cluster node): readiness, proxies from a
config, a clear failure with the log attached, and stop."""
from __future__ import annotations

import json
import time

import pytest

from chaoskit.cluster.proxy_node import ProxyServer
from chaoskit.cluster.waiting import NotReady, port_open


def test_server_process_with_proxies_from_a_config(tmp_path, echo, net):
    wanted = [{"name": "from-config", "upstream": echo.address, "listen": "127.0.0.1:0"}]
    server = ProxyServer(run_id="cfg", workdir=tmp_path, seed=5, proxies=wanted)
    with server:
        assert server.ready_info["seed"] == 5 and server.ready_info["run_id"] == "cfg"
        proxy = server.client().get_proxy("from-config")
        with net.connect(proxy.listen) as sock:
            sock.sendall(b"x")
            assert sock.recv(1) == b"x"
        port = server.ready_info["port"]
    assert not server.running
    assert not port_open("127.0.0.1", port)


def test_a_port_in_use_fails_fast_with_the_log(tmp_path, proxy_server):
    taken = proxy_server.ready_info["port"]
    second = ProxyServer(run_id="clash", workdir=tmp_path, port=taken)
    start = time.monotonic()
    with pytest.raises(NotReady) as info:
        second.start()
    second.stop()
    assert time.monotonic() - start < 10
    message = str(info.value)
    assert "exited with code 2" in message
    assert f"cannot listen on 127.0.0.1:{taken}: address already in use" in message  # the log's tail
    assert str(second.log_path) in message


def test_a_bad_config_fails_with_the_log(tmp_path):
    server = ProxyServer(run_id="bad", workdir=tmp_path, proxies=[{"name": "x"}])
    with pytest.raises(NotReady, match="missing required field: upstream at proxy 1"):
        server.start()
    server.stop()
    (tmp_path / "broken.json").write_text("[{")
    server.config_path = tmp_path / "broken.json"
    server.prepare = lambda clean: None  # keep the broken file as it is
    with pytest.raises(NotReady, match="cannot read the proxy list"):
        server.start()
    server.stop()
    assert json.loads(json.dumps(server.describe()))["role"] == "proxy"
