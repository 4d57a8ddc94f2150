"""The fault proxy: a server of Toxiproxy's v2 HTTP API (`python -m chaoskit.proxy`).

asyncio TCP proxies with toxics (latency, bandwidth, slow_close, timeout, reset_peer, slicer,
limit_data, noop), driven unchanged by toxiproxy-python. `ToxiproxyClient` drives ours or a real
Toxiproxy by URL. The package stands alone: chaoskit.cluster.proxy_node's `ProxyServer` runs
ours as a cluster node. docs/faults.md is the guide.
"""
from chaoskit.proxy.client import (ProxyApiError, ProxyConflict, ProxyInfo, ProxyNotFound,
                                   ProxyServerUnreachable, ToxicInfo, ToxiproxyClient)

__all__ = ["ToxiproxyClient", "ProxyInfo", "ToxicInfo", "ProxyApiError", "ProxyNotFound",
           "ProxyConflict", "ProxyServerUnreachable"]
