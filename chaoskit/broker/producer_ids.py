"""ProducerIdAllocator: unique producer ids for InitProducerId, handed out from blocks of 1000 that
each broker claims in ZooKeeper (`/latest_producer_id_block`, as Kafka's ZooKeeper-era brokers do),
so no two brokers ever give out the same id.
"""
from __future__ import annotations

import asyncio

from chaoskit.broker.zk import PRODUCER_ID_BLOCK_SIZE, BrokerZk


class ProducerIdAllocator:
    def __init__(self, zk: BrokerZk, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        self.zk, self.block_size = zk, block_size
        self._next, self._end = 0, -1
        self._lock = asyncio.Lock()

    async def _claim_if_used_up(self) -> None:
        if self._next > self._end:
            self._next, self._end = await asyncio.to_thread(self.zk.allocate_producer_ids, self.block_size)

    async def prefetch(self) -> None:
        """Claim a block now (at start-up), so ids can be handed out even while ZooKeeper is away."""
        async with self._lock:
            await self._claim_if_used_up()

    async def next_id(self) -> int:
        """The next unused id; ZkUnavailable when a new block is needed and ZooKeeper does not answer."""
        async with self._lock:
            await self._claim_if_used_up()
            pid = self._next
            self._next += 1
            return pid
