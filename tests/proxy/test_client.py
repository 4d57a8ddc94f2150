"""The facade chaoskit's cluster and nemesis code use (ToxiproxyClient), and the `chaoskit proxy`
command. The ProxyServer process handle is tests/cluster/test_proxy_node.py's."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit.proxy import ProxyApiError, ProxyConflict, ProxyNotFound, ProxyServerUnreachable, ToxiproxyClient


def test_ensure_proxy_keeps_or_replaces(api, echo, upstream):
    first = api.ensure_proxy("b1", echo.address)
    assert first.enabled and first.upstream == echo.address
    api.add_toxic("b1", "latency", {"latency": 10})
    again = api.ensure_proxy("b1", echo.address)
    assert again.listen == first.listen and [t.name for t in again.toxics] == ["latency_downstream"]
    off = api.ensure_proxy("b1", echo.address, enabled=False)
    assert off.enabled is False and off.listen == first.listen
    moved = api.ensure_proxy("b1", upstream.address)
    assert moved.upstream == upstream.address and moved.toxics == () and moved.enabled
    assert list(api.proxies()) == ["b1"]


def test_toxic_and_down_undo_even_when_the_block_fails(api, echo, net):
    proxy = api.create_proxy("c", echo.address)
    with pytest.raises(RuntimeError):
        with api.toxic("c", "latency", {"latency": 50}, stream="upstream") as toxic:
            assert (toxic.name, toxic.stream, toxic.attributes) == ("latency_upstream", "upstream",
                                                                    {"latency": 50, "jitter": 0})
            raise RuntimeError("the block failed")
    assert api.toxics("c") == []
    with pytest.raises(RuntimeError):
        with api.down("c") as down:
            assert down.enabled is False
            with pytest.raises(ConnectionRefusedError):
                net.connect(proxy.listen)
            raise RuntimeError("the block failed")
    assert api.get_proxy("c").enabled is True
    with net.connect(proxy.listen) as sock:
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"


def test_update_toxic_and_populate(api, echo):
    api.create_proxy("u", echo.address)
    api.add_toxic("u", "bandwidth", {"rate": 100}, toxicity=0.5)
    updated = api.update_toxic("u", "bandwidth_downstream", {"rate": 200}, toxicity=1.0)
    assert (updated.attributes, updated.toxicity) == ({"rate": 200}, 1.0)
    listed = api.populate([{"name": "u", "upstream": echo.address, "listen": api.get_proxy("u").listen},
                           {"name": "v", "upstream": echo.address}])
    assert [p.name for p in listed] == ["u", "v"] and listed[0].toxics[0].attributes == {"rate": 200}
    host, port = listed[1].address
    assert host == "127.0.0.1" and port > 0


def test_errors_say_what_went_wrong(api, echo):
    api.create_proxy("e", echo.address)
    with pytest.raises(ProxyConflict, match="HTTP 409: proxy already exists"):
        api.create_proxy("e", echo.address)
    with pytest.raises(ProxyNotFound, match="proxy not found"):
        api.get_proxy("missing")
    with pytest.raises(ProxyNotFound, match="toxic not found"):
        api.remove_toxic("e", "missing")
    with pytest.raises(ProxyApiError, match="HTTP 400: invalid toxic type") as info:
        api.add_toxic("e", "walrus")
    assert info.value.status == 400
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    with pytest.raises(ProxyServerUnreachable, match=f"127.0.0.1:{closed_port}"):
        ToxiproxyClient(f"http://127.0.0.1:{closed_port}", timeout=2).proxies()


def test_the_chaoskit_proxy_command_serves_until_sigterm(tmp_path):
    exe = Path(sys.executable).with_name("chaoskit")
    proc = subprocess.Popen([str(exe), "proxy", "--port", "0", "--seed", "9"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        ready = json.loads(proc.stdout.readline().removeprefix("READY "))
        assert ready["seed"] == 9 and ToxiproxyClient(ready["api"]).version().startswith("2.")
        proc.terminate()
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait()
