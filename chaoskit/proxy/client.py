"""`ToxiproxyClient`: how chaoskit drives a fault proxy, ours or a real Toxiproxy, by URL.

It speaks the HTTP API directly (stdlib urllib) rather than through toxiproxy-python 0.1.1, which
keeps host and port in class attributes (one server per process), takes a 500 (port in use) as a
success and then fails with a KeyError, cannot update a toxic, and never calls /populate. The
shapes are the same either way; the tests drive our server with toxiproxy-python too. Proxy
updates use POST, which every Toxiproxy 2.x takes (PATCH came later).

    client = ToxiproxyClient("http://127.0.0.1:8474")
    p = client.ensure_proxy("c-b1", upstream="127.0.0.1:9092")
    with client.toxic("c-b1", "latency", {"latency": 100, "jitter": 10}):
        ...                      # every byte from the broker to its clients is 90-110 ms late
    with client.down("c-b1"):
        ...                      # the listener is closed and every connection dropped
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from chaoskit.protocol.version import VERSION


class ProxyApiError(Exception):
    """The API answered with an error; `status` and `message` are what it said."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {message}")
        self.status, self.message = status, message


class ProxyNotFound(ProxyApiError):
    """404: no such proxy or toxic."""


class ProxyConflict(ProxyApiError):
    """409: a proxy or toxic of that name exists."""


class ProxyServerUnreachable(Exception):
    """Nothing answers at the API's URL."""


def _error_class(status: int) -> type[ProxyApiError]:
    return {404: ProxyNotFound, 409: ProxyConflict}.get(status, ProxyApiError)


@dataclass(frozen=True)
class ToxicInfo:
    name: str
    type: str
    stream: str
    toxicity: float
    attributes: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToxicInfo:
        return cls(data["name"], data["type"], data.get("stream", "downstream"),
                   float(data.get("toxicity", 1.0)), dict(data.get("attributes") or {}))


@dataclass(frozen=True)
class ProxyInfo:
    name: str
    listen: str
    upstream: str
    enabled: bool
    toxics: tuple[ToxicInfo, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProxyInfo:
        return cls(data["name"], data["listen"], data["upstream"], bool(data["enabled"]),
                   tuple(ToxicInfo.from_json(t) for t in data.get("toxics") or ()))

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) clients connect to."""
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]"), int(port)


class ToxiproxyClient:
    def __init__(self, url: str = "http://127.0.0.1:8474", timeout: float = 10.0) -> None:
        self.url, self.timeout = url.rstrip("/"), timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Content-Type": "application/json", "User-Agent": f"chaoskit/{VERSION}"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                text = answer.read()
        except urllib.error.HTTPError as e:
            raw = e.read().decode("utf-8", "replace")
            try:
                message = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                message = raw.strip() or e.reason
            raise _error_class(e.code)(method, path, e.code, message) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ProxyServerUnreachable(f"cannot reach the fault proxy API at {self.url}: {reason} "
                                         "(is `chaoskit proxy` or toxiproxy-server running there?)") from None
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            return text.decode("utf-8", "replace").strip()  # /version of Toxiproxy before 2.7 is plain text

    @staticmethod
    def _path(*parts: str) -> str:
        return "".join("/" + quote(p, safe="") for p in parts)

    # --- the server ------------------------------------------------------------------------------
    def version(self) -> str:
        answer = self._call("GET", "/version")
        return answer["version"] if isinstance(answer, dict) else str(answer)

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call("POST", "/reset")

    def populate(self, proxies: list[dict[str, Any]]) -> list[ProxyInfo]:
        """Create or replace proxies in bulk (unchanged ones are kept, toxics and all)."""
        return [ProxyInfo.from_json(p) for p in self._call("POST", "/populate", proxies)["proxies"] or ()]

    # --- proxies ---------------------------------------------------------------------------------
    def proxies(self) -> dict[str, ProxyInfo]:
        return {name: ProxyInfo.from_json(p) for name, p in self._call("GET", "/proxies").items()}

    def get_proxy(self, name: str) -> ProxyInfo:
        return ProxyInfo.from_json(self._call("GET", self._path("proxies", name)))

    def create_proxy(self, name: str, upstream: str, listen: str = "127.0.0.1:0", enabled: bool = True) -> ProxyInfo:
        body = {"name": name, "upstream": upstream, "listen": listen, "enabled": enabled}
        return ProxyInfo.from_json(self._call("POST", "/proxies", body))

    def ensure_proxy(self, name: str, upstream: str, listen: str | None = None, enabled: bool = True) -> ProxyInfo:
        """The proxy `name` to `upstream`, enabled or not as asked: an existing one with the same
        upstream (and listen address, when one with a fixed port is given) is kept with its toxics;
        a different one is replaced."""
        existing = self.proxies().get(name)
        if existing is not None:
            same_listen = listen is None or listen.endswith(":0") or listen == existing.listen
            if existing.upstream == upstream and same_listen:
                return existing if existing.enabled == enabled else self.update_proxy(name, enabled=enabled)
            self.delete_proxy(name)
        return self.create_proxy(name, upstream, listen or "127.0.0.1:0", enabled)

    def update_proxy(self, name: str, *, listen: str | None = None, upstream: str | None = None,
                     enabled: bool | None = None) -> ProxyInfo:
        body = {k: v for k, v in (("listen", listen), ("upstream", upstream), ("enabled", enabled)) if v is not None}
        return ProxyInfo.from_json(self._call("POST", self._path("proxies", name), body))

    def disable(self, name: str) -> ProxyInfo:
        """Close the proxy's listener and drop its connections (a network partition of that path)."""
        return self.update_proxy(name, enabled=False)

    def enable(self, name: str) -> ProxyInfo:
        return self.update_proxy(name, enabled=True)

    @contextmanager
    def down(self, name: str) -> Iterator[ProxyInfo]:
        """The proxy disabled for the block, enabled again after it, even if the block fails."""
        try:
            yield self.disable(name)
        finally:
            self.enable(name)

    def delete_proxy(self, name: str) -> None:
        self._call("DELETE", self._path("proxies", name))

    def delete_all(self) -> None:
        for name in self.proxies():
            try:
                self.delete_proxy(name)
            except ProxyNotFound:
                pass  # someone else deleted it meanwhile

    # --- toxics ----------------------------------------------------------------------------------
    def toxics(self, proxy: str) -> list[ToxicInfo]:
        return [ToxicInfo.from_json(t) for t in self._call("GET", self._path("proxies", proxy, "toxics"))]

    def add_toxic(self, proxy: str, type: str, attributes: dict[str, Any] | None = None, *,
                  stream: str = "downstream", toxicity: float = 1.0, name: str | None = None) -> ToxicInfo:
        """Add a toxic; its name defaults to "<type>_<stream>", as Toxiproxy's."""
        body = {"name": name or f"{type}_{stream}", "type": type, "stream": stream,
                "toxicity": toxicity, "attributes": attributes or {}}
        return ToxicInfo.from_json(self._call("POST", self._path("proxies", proxy, "toxics"), body))

    def update_toxic(self, proxy: str, name: str, attributes: dict[str, Any] | None = None,
                     toxicity: float | None = None) -> ToxicInfo:
        body: dict[str, Any] = {"attributes": attributes or {}}
        if toxicity is not None:
            body["toxicity"] = toxicity
        return ToxicInfo.from_json(self._call("POST", self._path("proxies", proxy, "toxics", name), body))

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", self._path("proxies", proxy, "toxics", name))

    @contextmanager
    def toxic(self, proxy: str, type: str, attributes: dict[str, Any] | None = None, **options: Any) -> Iterator[ToxicInfo]:
        """A toxic for the duration of the block; removed after it, even if the block fails."""
        added = self.add_toxic(proxy, type, attributes, **options)
        try:
            yield added
        finally:
            try:
                self.remove_toxic(proxy, added.name)
            except ProxyNotFound:
                pass  # a reset or the proxy's deletion took it already
