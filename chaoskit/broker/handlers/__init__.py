"""Request handlers, one module per API family; each registers itself in HANDLERS (registry.py)
by API key.

A handler is `async def handle(broker, header, request) -> response | None` (None: no answer, as
for Produce with acks=0); `broker` is the BrokerService, which gives it the metadata cache, the
replica manager, ZooKeeper and the group coordinator.
"""
from __future__ import annotations

from chaoskit.broker.handlers.registry import HANDLERS, Handler


def load_all() -> dict[int, Handler]:
    """Import every handler module (registration is their side effect) and return the table."""
    from chaoskit.broker.handlers import (admin, configs, control, fetch, groups, metadata,  # noqa: F401
                                          offsets, partitions, produce)
    return HANDLERS
