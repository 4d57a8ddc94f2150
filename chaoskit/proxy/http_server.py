"""A small HTTP/1.1 server on asyncio: enough for a JSON API (keep-alive, Content-Length and
chunked bodies, Expect: 100-continue), with limits so that a bad client cannot hurt the process.

It shares the event loop with the proxies, so the API answers while bytes flow. A request that is
not HTTP gets a 4xx and that connection is closed; the server goes on serving the others.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from http import HTTPStatus
from urllib.parse import unquote, urlsplit

log = logging.getLogger("chaoskit.proxy.http")

MAX_LINE = 16 * 1024  # request line or one header
MAX_HEADERS = 100
MAX_BODY = 4 * 1024 * 1024
IDLE_TIMEOUT = 60.0  # between requests on a kept-alive connection
READ_TIMEOUT = 15.0  # to read one whole request once its first line arrived


@dataclass
class Request:
    method: str
    path: str  # percent-decoded
    query: str
    version: str
    headers: dict[str, str]  # lower-cased names
    body: bytes = b""

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return connection == "keep-alive"
        return connection != "close"


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response]]


class BadRequest(Exception):
    """The bytes are not an HTTP request we take; answered with `status` and the connection closed."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


async def start_http_server(handler: Handler, host: str, port: int) -> asyncio.Server:
    return await asyncio.start_server(partial(_serve_connection, handler), host, port, limit=MAX_LINE)


async def _readline(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise BadRequest("request line or header too long", 431) from None
    except asyncio.IncompleteReadError as e:
        if e.partial:
            raise BadRequest("connection closed in the middle of a request") from None
        raise


async def _read_head(reader: asyncio.StreamReader, first: bytes) -> Request:
    try:
        method, target, version = first.decode("latin-1").strip().split(" ")
    except ValueError:
        raise BadRequest(f"malformed request line {first[:80]!r}") from None
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(f"unsupported protocol {version[:20]!r}", 505)
    headers: dict[str, str] = {}
    while (line := await _readline(reader)) not in (b"\r\n", b"\n"):
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or not name.strip() or len(headers) >= MAX_HEADERS:
            raise BadRequest(f"malformed header {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    parts = urlsplit(target)
    return Request(method.upper(), unquote(parts.path), parts.query, version, headers)


async def _read_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: Request) -> bytes:
    if request.headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    if "chunked" in request.headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = (await _readline(reader)).split(b";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise BadRequest(f"malformed chunk size {size_line[:20]!r}") from None
            if size == 0:
                while await _readline(reader) not in (b"\r\n", b"\n"):  # trailers
                    pass
                return bytes(body)
            if len(body) + size > MAX_BODY:
                raise BadRequest(f"body larger than {MAX_BODY} bytes", 413)
            body += await reader.readexactly(size)
            await _readline(reader)
    length_text = request.headers.get("content-length", "0")
    if not length_text.isdigit():
        raise BadRequest(f"bad Content-Length {length_text[:20]!r}")
    length = int(length_text)
    if length > MAX_BODY:
        raise BadRequest(f"body larger than {MAX_BODY} bytes", 413)
    return await reader.readexactly(length)


def encode_response(response: Response, keep_alive: bool) -> bytes:
    status = HTTPStatus(response.status)
    lines = [f"HTTP/1.1 {status.value} {status.phrase}"]
    body = b"" if status == HTTPStatus.NO_CONTENT else response.body
    if status != HTTPStatus.NO_CONTENT:
        lines += [f"Content-Type: {response.content_type}", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in response.headers.items()]
    lines.append(f"Connection: {'keep-alive' if keep_alive else 'close'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def _serve_connection(handler: Handler, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                first = await asyncio.wait_for(_readline(reader), IDLE_TIMEOUT)
                if not first.strip():
                    continue  # stray CRLF between requests is allowed
                request = await asyncio.wait_for(_read_head(reader, first), READ_TIMEOUT)
                request.body = await asyncio.wait_for(_read_body(reader, writer, request), READ_TIMEOUT)
            except BadRequest as e:
                text = f"{e}\n".encode()
                writer.write(encode_response(Response(e.status, text, "text/plain; charset=utf-8"), False))
                await writer.drain()
                return
            except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
                return
            try:
                response = await handler(request)
            except Exception:
                log.exception("%s %s failed", request.method, request.path)
                response = Response(500, b'{"error": "internal error, see the server log", "status": 500}\n')
            writer.write(encode_response(response, request.keep_alive))
            await writer.drain()
            if not request.keep_alive:
                return
    except ConnectionError:
        pass
    finally:
        writer.close()
