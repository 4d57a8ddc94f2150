"""Fixtures for the fault proxy's tests: the API of the session's proxy server (tests/conftest.py's
`proxy_server`), emptied after every test, and raw HTTP against it."""
from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from chaoskit.cluster.proxy_node import ProxyServer
from chaoskit.proxy import ToxiproxyClient


class Http:
    """Raw HTTP against the API, to check status codes and bodies byte for byte."""

    def __init__(self, port: int) -> None:
        self.port = port

    def __call__(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
                 headers: dict[str, str] | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            conn.request(method, path, body=data, headers=headers or {})
            answer = conn.getresponse()
            text = answer.read()
        finally:
            conn.close()
        try:
            return answer.status, json.loads(text) if text else None
        except ValueError:
            return answer.status, text.decode()


@pytest.fixture
def api(proxy_server: ProxyServer) -> Iterator[ToxiproxyClient]:
    client = proxy_server.client()
    try:
        yield client
    finally:
        client.delete_all()


@pytest.fixture
def raw_http(proxy_server: ProxyServer, api: ToxiproxyClient) -> Http:
    return Http(proxy_server.ready_info["port"])
