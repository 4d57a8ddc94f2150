"""The fault proxy: a server of Toxiproxy's v2 HTTP API (`python -m chaoskit.proxy`).

asyncio TCP proxies with toxics (latency, bandwidth, timeout, reset_peer, ...),
driven unchanged by toxiproxy-python.
"""
