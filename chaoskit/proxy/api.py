"""Toxiproxy's v2 HTTP API over our proxies: routes, request checks, JSON shapes, status codes.

Shapes and codes are Toxiproxy's: a proxy is {name, listen, upstream, enabled, toxics}; a toxic
{attributes, name, type, stream, toxicity}; creating a proxy answers 201, creating a toxic 200,
deleting 204, /reset 204, /populate 201 with {"proxies": [...]}; errors are {"error", "status"}
with 400 (bad body, missing field, bad stream, unknown toxic type, a name no path could name again),
404, 409 (duplicate name) and 500 (an address that cannot be bound, passed through from the OS;
/reset resets every proxy it can and names the ones it could not enable). Every change is made under one
lock, so concurrent requests see the collection change one request at a time.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from chaoskit.protocol.version import VERSION as CHAOSKIT_VERSION
from chaoskit.proxy.addresses import upstream_address
from chaoskit.proxy.errors import BAD_REQUEST_BODY, MISSING_FIELD, PROXY_EXISTS, PROXY_NOT_FOUND, ApiError
from chaoskit.proxy.http_server import Request, Response
from chaoskit.proxy.proxy import Proxy

# the Toxiproxy API level we speak, with our own version as build metadata
VERSION = f"2.12.0+chaoskit.{CHAOSKIT_VERSION}"

MAX_NAME = 255  # characters of a proxy's or toxic's name: a path naming it stays within a request line
Route = tuple[frozenset[str], re.Pattern[str], str]
_NAME = r"(?P<proxy>[^/]+)"
ROUTES: list[Route] = [
    (frozenset(methods.split()), re.compile(f"^{pattern}/?$"), handler)
    for methods, pattern, handler in [
        ("GET", "/proxies", "proxy_index"),
        ("POST", "/proxies", "proxy_create"),
        ("POST", "/populate", "populate"),
        ("POST", "/reset", "reset"),
        ("GET", "/version", "version"),
        ("GET", f"/proxies/{_NAME}", "proxy_show"),
        ("POST PATCH", f"/proxies/{_NAME}", "proxy_update"),
        ("DELETE", f"/proxies/{_NAME}", "proxy_delete"),
        ("GET", f"/proxies/{_NAME}/toxics", "toxic_index"),
        ("POST", f"/proxies/{_NAME}/toxics", "toxic_create"),
        ("GET", f"/proxies/{_NAME}/toxics/(?P<toxic>[^/]+)", "toxic_show"),
        ("POST PATCH", f"/proxies/{_NAME}/toxics/(?P<toxic>[^/]+)", "toxic_update"),
        ("DELETE", f"/proxies/{_NAME}/toxics/(?P<toxic>[^/]+)", "toxic_delete"),
    ]
]


def json_response(data: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(data).encode())


def decode_body(request: Request) -> Any:
    if not request.body.strip():
        raise BAD_REQUEST_BODY.joined("EOF (the request has no JSON body)")
    try:
        return json.loads(request.body)
    except ValueError as e:
        raise BAD_REQUEST_BODY.joined(f"invalid JSON: {e}") from None
    except RecursionError:
        raise BAD_REQUEST_BODY.joined("invalid JSON: nested too deeply") from None


def checked_name(name: str, what: str) -> str:
    """A proxy's or toxic's name that a request path can name again: at most MAX_NAME characters,
    without "/" or control characters (so whatever is created can be shown, changed and deleted)."""
    if len(name) > MAX_NAME:
        raise BAD_REQUEST_BODY.joined(f"{what} name is {len(name)} characters long; at most {MAX_NAME}")
    if "/" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise BAD_REQUEST_BODY.joined(f"{what} name {name!r} holds '/' or a control character, which a path "
                                      f"cannot name")
    return name


def _field(body: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise BAD_REQUEST_BODY.joined(f"{key} must be a {'boolean' if kind is bool else 'string'}, got {value!r}")
    return value


def proxy_fields(body: Any, where: str = "") -> tuple[str, str, str, bool]:
    """(name, listen, upstream, enabled) of a proxy in a create or populate request."""
    if not isinstance(body, dict):
        raise BAD_REQUEST_BODY.joined(f"expected a JSON object with name, listen, upstream and enabled{where}, got {body!r}")
    name = _field(body, "name", str, "")
    listen = _field(body, "listen", str, "")
    upstream = _field(body, "upstream", str, "")
    enabled = _field(body, "enabled", bool, True)
    if not name:
        raise MISSING_FIELD.joined(f"name{where}")
    if not upstream:
        raise MISSING_FIELD.joined(f"upstream{where}")
    return checked_name(name, "proxy"), listen, upstream, enabled


class ToxiproxyApi:
    """The proxies of one server and the handlers of its HTTP API. `seed` drives every random draw."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.proxies: dict[str, Proxy] = {}
        self._lock = asyncio.Lock()
        self._request_ids = itertools.count(1)

    async def handle(self, request: Request) -> Response:
        request_id = {"X-Toxiproxy-Request-Id": str(next(self._request_ids))}
        if request.headers.get("user-agent", "").startswith("Mozilla/"):
            # as Toxiproxy: a browser must not be tricked into changing proxies (CSRF)
            return Response(403, b"User agent not allowed\n", "text/plain; charset=utf-8", request_id)
        handler, params = self._route(request)
        try:
            async with self._lock:
                response = await handler(request, **params)
        except ApiError as e:
            response = Response(e.status, e.body())
        response.headers.update(request_id)
        return response

    def _route(self, request: Request) -> tuple[Callable[..., Awaitable[Response]], dict[str, str]]:
        allowed = False
        for methods, pattern, name in ROUTES:
            match = pattern.match(request.path)
            if match:
                if request.method in methods:
                    return getattr(self, name), match.groupdict()
                allowed = True
        return (self._method_not_allowed if allowed else self._not_found), {}

    async def _not_found(self, request: Request) -> Response:
        return Response(404, b"404 page not found\n", "text/plain; charset=utf-8")

    async def _method_not_allowed(self, request: Request) -> Response:
        raise ApiError(f"method {request.method} not allowed on {request.path}", 405)

    def _proxy(self, name: str) -> Proxy:
        proxy = self.proxies.get(name)
        if proxy is None:
            raise PROXY_NOT_FOUND
        return proxy

    # --- proxies ---------------------------------------------------------------------------------
    async def version(self, request: Request) -> Response:
        return Response(200, (json.dumps({"version": VERSION}) + "\n").encode(), "application/json;charset=utf-8")

    async def proxy_index(self, request: Request) -> Response:
        return json_response({name: p.to_json() for name, p in self.proxies.items()})

    async def proxy_create(self, request: Request) -> Response:
        name, listen, upstream, enabled = proxy_fields(decode_body(request))
        if name in self.proxies:
            raise PROXY_EXISTS
        proxy = Proxy(name, listen, upstream, self.seed)
        if enabled:
            await proxy.start()
        self.proxies[name] = proxy
        return json_response(proxy.to_json(), 201)

    async def proxy_show(self, request: Request, proxy: str) -> Response:
        return json_response(self._proxy(proxy).to_json())

    async def proxy_update(self, request: Request, proxy: str) -> Response:
        target = self._proxy(proxy)
        body = decode_body(request)
        if not isinstance(body, dict):
            raise BAD_REQUEST_BODY.joined(f"expected a JSON object with listen, upstream and/or enabled, got {body!r}")
        await target.update(_field(body, "listen", str, target.listen),
                            _field(body, "upstream", str, target.upstream),
                            _field(body, "enabled", bool, target.enabled))
        return json_response(target.to_json())

    async def proxy_delete(self, request: Request, proxy: str) -> Response:
        await self._proxy(proxy).stop()
        del self.proxies[proxy]
        return Response(204)

    async def reset(self, request: Request) -> Response:
        """Every proxy enabled and without toxics, as far as each can be: one that cannot listen (its
        address taken, say) keeps the others from nothing; the answer then names it (500, as a
        listener that cannot bind answers elsewhere), and its toxics are removed all the same."""
        failed = []
        for name, proxy in self.proxies.items():
            proxy.reset_toxics()
            try:
                await proxy.start()
            except ApiError as e:
                failed.append(f"{name}: {e.message}")
        if failed:
            raise ApiError(f"reset every other proxy; could not enable {'; '.join(failed)}", 500)
        return Response(204)

    async def populate(self, request: Request) -> Response:
        created: list[Proxy] = []
        try:
            await self.populate_from(decode_body(request), created)
        except ApiError as e:
            return json_response({**e.to_json(), "proxies": [p.to_json() for p in created]}, e.status)
        return json_response({"proxies": [p.to_json() for p in created]}, 201)

    async def populate_from(self, items: Any, created: list[Proxy]) -> None:
        """Create or replace each proxy; one whose listen and upstream are unchanged is kept as it is
        (with its toxics). Every entry is checked before any is touched."""
        if not isinstance(items, list):
            raise BAD_REQUEST_BODY.joined(f"expected a JSON array of proxies, got {items!r}")
        fields = []
        for i, item in enumerate(items, start=1):
            fields.append(proxy_fields(item, f" at proxy {i}"))
            upstream_address(fields[-1][2])
        for name, listen, upstream, enabled in fields:
            existing = self.proxies.get(name)
            if existing is not None:
                if not existing.differs(listen, upstream):
                    created.append(existing)
                    continue
                await existing.stop()
            proxy = Proxy(name, listen, upstream, self.seed)
            if enabled:
                await proxy.start()
            self.proxies[name] = proxy
            created.append(proxy)

    async def shutdown(self) -> None:
        for proxy in self.proxies.values():
            await proxy.stop()

    # --- toxics ----------------------------------------------------------------------------------
    async def toxic_index(self, request: Request, proxy: str) -> Response:
        return json_response([t.to_json() for t in self._proxy(proxy).toxics()])

    async def toxic_create(self, request: Request, proxy: str) -> Response:
        target = self._proxy(proxy)
        body = decode_body(request)
        if isinstance(body, dict) and isinstance(body.get("name"), str):
            checked_name(body["name"], "toxic")
        return json_response(target.add_toxic(body).to_json())

    async def toxic_show(self, request: Request, proxy: str, toxic: str) -> Response:
        return json_response(self._proxy(proxy).get_toxic(toxic).to_json())

    async def toxic_update(self, request: Request, proxy: str, toxic: str) -> Response:
        target = self._proxy(proxy)
        target.get_toxic(toxic)  # 404 before looking at the body, as Toxiproxy
        return json_response(target.update_toxic(toxic, decode_body(request)).to_json())

    async def toxic_delete(self, request: Request, proxy: str, toxic: str) -> Response:
        self._proxy(proxy).remove_toxic(toxic)
        return Response(204)
