"""The fault proxy: a server of Toxiproxy's v2 HTTP API (`python -m chaoskit.proxy`).

asyncio TCP proxies with toxics (latency, bandwidth, slow_close, timeout, reset_peer, slicer,
limit_data, noop), driven unchanged by toxiproxy-python. `ToxiproxyClient` drives ours or a real
Toxiproxy by URL; `ProxyServer` runs ours as a child process. docs/faults.md is the guide.
"""
from chaoskit.proxy.client import (ProxyApiError, ProxyConflict, ProxyInfo, ProxyNotFound,
                                   ProxyServerUnreachable, ToxicInfo, ToxiproxyClient)
from chaoskit.proxy.process import ProxyServer

__all__ = ["ToxiproxyClient", "ProxyServer", "ProxyInfo", "ToxicInfo", "ProxyApiError", "ProxyNotFound",
           "ProxyConflict", "ProxyServerUnreachable"]
