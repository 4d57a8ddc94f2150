"""A proxy: a listener, the connections it accepted, and a toxic chain per direction.

Each accepted client gets a fresh connection to the upstream (a client whose upstream cannot be
reached is closed, as Toxiproxy does). Disabling closes the listener and drops every connection;
enabling binds the same address again. Toxic changes reach every live connection at once
(link.py says how nothing buffered is lost).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

from chaoskit.proxy.addresses import bind_listener, bound_address, canonical, upstream_address
from chaoskit.proxy.connection import Connection, set_nodelay
from chaoskit.proxy.errors import TOXIC_EXISTS, TOXIC_NOT_FOUND
from chaoskit.proxy.toxics import STREAMS, Toxic, parse_attributes, parse_new_toxic, parse_update

log = logging.getLogger("chaoskit.proxy")
CONNECT_TIMEOUT = 10.0  # seconds to reach the upstream before the client is closed


class Proxy:
    def __init__(self, name: str, listen: str, upstream: str, seed: int) -> None:
        upstream_address(upstream)  # refuse a malformed upstream now, not on every connection
        self.name, self.listen, self.upstream, self.seed = name, listen, upstream, seed
        self.enabled = False
        self.chains: dict[str, list[Toxic]] = {d: [] for d in STREAMS}
        self.connections: set[Connection] = set()
        self._server: asyncio.AbstractServer | None = None
        self._accepted = itertools.count(1)
        self._toxic_seq = itertools.count(1)

    # --- shape ----------------------------------------------------------------------------------
    def toxics(self) -> list[Toxic]:
        return [t for d in STREAMS for t in self.chains[d]]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "listen": self.listen, "upstream": self.upstream,
                "enabled": self.enabled, "toxics": [t.to_json() for t in self.toxics()]}

    def differs(self, listen: str, upstream: str) -> bool:
        return canonical(listen) != canonical(self.listen) or upstream != self.upstream

    # --- life cycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        """Bind and serve; ApiError (500) if the address cannot be bound. No-op when enabled."""
        if self.enabled:
            return
        sock = bind_listener(self.listen)
        self._server = await asyncio.start_server(self._accept, sock=sock)
        self.listen = bound_address(sock)
        self.enabled = True
        log.info("proxy %s listening on %s, upstream %s", self.name, self.listen, self.upstream)

    async def stop(self) -> None:
        """Close the listener and drop every connection."""
        if not self.enabled:
            return
        self.enabled = False
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for conn in list(self.connections):
            conn.abort()
        log.info("proxy %s stopped; %d connections dropped", self.name, len(self.connections))

    async def update(self, listen: str, upstream: str, enabled: bool) -> None:
        """Toxiproxy's update: a new address or upstream restarts the proxy (dropping connections)."""
        if self.differs(listen, upstream):
            upstream_address(upstream)
            await self.stop()
            self.listen, self.upstream = listen, upstream
        if enabled and not self.enabled:
            await self.start()
        elif not enabled:
            await self.stop()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = next(self._accepted)
        peer = writer.get_extra_info("peername")
        label = f"{self.name}#{number} ({peer[0]}:{peer[1]})" if peer else f"{self.name}#{number}"
        if not self.enabled:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*upstream_address(self.upstream)), CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError) as e:
            log.warning("%s: cannot reach upstream %s: %s; closing the client", label, self.upstream, e)
            writer.close()
            return
        if not self.enabled:  # disabled while we dialled
            writer.transport.abort()
            up_writer.transport.abort()
            return
        set_nodelay(writer)
        set_nodelay(up_writer)
        conn = Connection(label, (reader, writer), (up_reader, up_writer), self.chains,
                          seed=f"{self.seed}/{self.name}/{number}")
        self.connections.add(conn)
        log.debug("%s accepted", label)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)

    # --- toxics ---------------------------------------------------------------------------------
    def find_toxic(self, name: str) -> Toxic | None:
        return next((t for t in self.toxics() if t.name == name), None)

    def get_toxic(self, name: str) -> Toxic:
        toxic = self.find_toxic(name)
        if toxic is None:
            raise TOXIC_NOT_FOUND
        return toxic

    def add_toxic(self, body: Any) -> Toxic:
        toxic = parse_new_toxic(body)
        if self.find_toxic(toxic.name) is not None:
            raise TOXIC_EXISTS
        toxic.attributes = parse_attributes(toxic.type, body.get("attributes"))
        toxic.seq = next(self._toxic_seq)
        self.chains[toxic.direction].append(toxic)
        for conn in self.connections:
            conn.links[toxic.direction].add(toxic)
        log.info("proxy %s: added %s", self.name, toxic.to_json())
        return toxic

    def update_toxic(self, name: str, body: Any) -> Toxic:
        toxic = self.get_toxic(name)
        toxicity, attributes = parse_update(toxic, body)
        changed = toxicity != toxic.toxicity
        toxic.toxicity, toxic.attributes = toxicity, attributes
        for conn in self.connections:
            conn.links[toxic.direction].update(toxic, toxicity_changed=changed)
        log.info("proxy %s: updated %s", self.name, toxic.to_json())
        return toxic

    def remove_toxic(self, name: str) -> None:
        toxic = self.get_toxic(name)
        self.chains[toxic.direction].remove(toxic)
        for conn in list(self.connections):
            conn.links[toxic.direction].remove(toxic)
        log.info("proxy %s: removed toxic %s", self.name, name)

    def reset_toxics(self) -> None:
        for toxic in self.toxics():
            self.remove_toxic(toxic.name)
