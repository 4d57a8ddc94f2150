"""KafkaServer: the asyncio TCP server; one task per connection, requests answered in order.

Kafka's per-connection guarantee is kept by handling one request at a time per connection.
Bad input never takes the server down: an unsupported version gets UNSUPPORTED_VERSION, a request
whose header is readable but whose body is not gets INVALID_REQUEST, and a frame that cannot even be
split from the stream (negative or oversized length, torn header) closes that one connection.
"""
from __future__ import annotations

import asyncio
import logging
import struct
from contextvars import ContextVar
from collections.abc import Awaitable, Callable
from typing import Any

from kafka.protocol.api_header import RequestHeader

from chaoskit.broker.request_checks import reject_nulls
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.framing import FrameError, frame, read_frame
from chaoskit.protocol.registry import (API_VERSIONS_KEY, MalformedRequest, UnsupportedVersion, decode_request,
                                        encode_response, response_class, unsupported_version_response)

log = logging.getLogger("chaoskit.broker.server")

Dispatch = Callable[[RequestHeader, Any], Awaitable[Any]]
# the peer host of the connection being served, for handlers that report it (DescribeGroups)
CLIENT_HOST: ContextVar[str] = ContextVar("client_host", default="")
_FIXED_HEADER = struct.Struct(">hhi")
_ERROR_ONLY = struct.Struct(">ih")


def error_response(header: RequestHeader, code: int) -> bytes:
    """A framed answer carrying `code` for a request we could not handle.

    The API's own response shape with its top-level error code when it has one; otherwise a bare
    correlation id and error code, which tells the client no less than a closed connection would.
    """
    try:
        cls = response_class(header.request_api_key, header.request_api_version)
        field = cls.fields.get("error_code")
        if field is not None and field.for_version_q(header.request_api_version):
            response = cls(version=header.request_api_version)
            response.error_code = code
            return encode_response(header, response)
    except Exception:  # an unknown key or a version past kafka-python's schema
        pass
    return frame(_ERROR_ONLY.pack(header.correlation_id, code))


class KafkaServer:
    def __init__(self, listener: tuple[str, int], dispatch: Dispatch, max_frame_bytes: int) -> None:
        self.listener = listener
        self.dispatch = dispatch
        self.max_frame_bytes = max_frame_bytes
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Bind the listener; OSError (e.g. address in use) propagates to the caller."""
        host, port = self.listener
        self._server = await asyncio.start_server(self._connection, host, port, reuse_address=True)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        CLIENT_HOST.set(peer[0] if isinstance(peer, tuple) else "")
        try:
            while True:
                try:
                    payload = await read_frame(reader, self.max_frame_bytes)
                except FrameError as e:
                    log.warning("closing the connection from %s: %s", peer, e)
                    return
                if payload is None:
                    return
                answer = await self._answer(payload, peer)
                if answer is None:
                    continue
                if answer is _CLOSE:
                    return
                writer.write(answer)
                await writer.drain()
        except (ConnectionError, OSError) as e:
            log.debug("connection from %s ended: %r", peer, e)
        except asyncio.CancelledError:
            pass  # the server is stopping; ending quietly keeps asyncio from logging the cancellation
        finally:
            self._connections.discard(task)
            writer.close()

    async def _answer(self, payload: bytes, peer: Any) -> Any:
        """The framed response bytes, None for no response (acks=0), or _CLOSE to drop the connection."""
        try:
            header, request = decode_request(payload)
            reject_nulls(request, header.request_api_version, header.correlation_id)
        except UnsupportedVersion as e:
            # clients probe ApiVersions at their newest version first: that one is routine
            (log.debug if e.api_key == API_VERSIONS_KEY else log.info)("from %s: %s", peer, e)
            return unsupported_version_response(e.header, e.request)
        except MalformedRequest as e:
            if e.correlation_id is None or len(payload) < _FIXED_HEADER.size:
                log.warning("closing the connection from %s: %s", peer, e)
                return _CLOSE
            api_key, api_version, correlation_id = _FIXED_HEADER.unpack_from(payload)
            log.warning("from %s: %s; answering INVALID_REQUEST", peer, e)
            return error_response(RequestHeader(request_api_key=api_key, request_api_version=api_version,
                                                correlation_id=correlation_id), ErrorCode.INVALID_REQUEST)
        try:
            response = await self.dispatch(header, request)
        except KafkaError as e:
            log.info("%s v%d from %s: %s", type(request).__name__, header.request_api_version, peer, e)
            return error_response(header, e.code)
        except Exception:
            log.exception("handling %s v%d from %s failed", type(request).__name__,
                          header.request_api_version, peer)
            return error_response(header, ErrorCode.UNKNOWN_SERVER_ERROR)
        if response is None:
            return None
        try:
            return encode_response(header, response)
        except Exception:
            log.exception("encoding the answer to %s v%d failed; closing the connection",
                          type(request).__name__, header.request_api_version)
            return _CLOSE


_CLOSE = object()
