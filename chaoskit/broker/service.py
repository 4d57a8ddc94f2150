"""BrokerService: one broker's parts wired together (server, ZooKeeper session, metadata cache,
replicas, producer ids, group coordinator) and its start and stop order.

Start: open (and recover) the logs on disk, bind the listener, then register in ZooKeeper, so a
broker others can see is already reachable. Stop: the reverse.
"""
from __future__ import annotations

import asyncio
import errno
import logging
from pathlib import Path
from typing import Any

from kafka.protocol.api_header import RequestHeader

from chaoskit.broker.config import BrokerConfig
from chaoskit.broker.coordinator_store import attach_coordinator
from chaoskit.broker.handlers import load_all
from chaoskit.broker.metadata_cache import MetadataCache
from chaoskit.broker.producer_ids import ProducerIdAllocator
from chaoskit.broker.replica_manager import ReplicaManager
from chaoskit.broker.request_log import RequestLog
from chaoskit.broker.server import KafkaServer
from chaoskit.broker.zk import BrokerZk
from chaoskit.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("chaoskit.broker")


class StartupError(Exception):
    """The broker cannot start; the message says what to change."""


class BrokerService:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.request_log = RequestLog(Path(config.request_log_path)) if config.request_log_path else None
        self.cache = MetadataCache()
        self.zk = BrokerZk(config)
        self.replicas = ReplicaManager(config, self.cache, self.zk)
        self.producer_ids = ProducerIdAllocator(self.zk)
        self.controller_epoch = -1  # the highest controller epoch seen; older ones are fenced
        self.offsets_partitions: int | None = None  # __consumer_offsets' partition count, once known
        self.handlers = load_all()
        self.coordinator = attach_coordinator(self)
        self.server = KafkaServer(config.listener, self.dispatch, config.socket_request_max_bytes)
        self._maintenance: asyncio.Task[None] | None = None

    async def start(self, zk_timeout_s: float = 30.0) -> None:
        self.replicas.open_existing_logs()
        try:
            await self.server.start()
        except OSError as e:
            host, port = self.config.listener
            hint = ("another process holds it; choose a free port" if e.errno == errno.EADDRINUSE
                    else "check the host is a local address")
            raise StartupError(f"listeners {host}:{port}: cannot bind ({e.strerror}); {hint}") from e
        await asyncio.to_thread(self.zk.start, zk_timeout_s)
        await self.producer_ids.prefetch()
        self._maintenance = asyncio.create_task(self.replicas.run_maintenance())
        log.info("broker %d serving on %s:%d (advertised %s:%d)", self.config.broker_id, *self.config.listener,
                 *self.config.advertised)

    async def stop(self) -> None:
        await self.server.stop()
        await self.coordinator.close()
        if self._maintenance is not None:
            self._maintenance.cancel()
        await self.replicas.stop()
        await asyncio.to_thread(self.zk.stop)
        if self.request_log is not None:
            self.request_log.close()

    async def dispatch(self, header: RequestHeader, request: Any) -> Any:
        handler = self.handlers.get(header.request_api_key)
        if handler is None:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"no handler for API key {header.request_api_key}")
        response = await handler(self, header, request)
        if self.request_log is not None and response is not None:
            try:
                self.request_log.write(header, request, response)
            except Exception as e:  # noqa: BLE001 -- the log must never cost the client its answer
                log.warning("request log: %r", e)
        return response
