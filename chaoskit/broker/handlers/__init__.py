"""Request handlers, one module per API family; each registers itself in HANDLERS by API key.

A handler is `async def handle(broker, header, request) -> response | None` (None: no answer, as
for Produce with acks=0); `broker` is the BrokerService, which gives it the metadata cache, the
replica manager, ZooKeeper and the group coordinator.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Handler = Callable[[Any, Any, Any], Awaitable[Any]]
HANDLERS: dict[int, Handler] = {}


def handles(*api_keys: int) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for key in api_keys:
            HANDLERS[key] = fn
        return fn
    return register


def load_all() -> dict[int, Handler]:
    """Import every handler module (registration is their side effect) and return the table."""
    from chaoskit.broker.handlers import (admin, configs, control, fetch, groups, metadata,  # noqa: F401
                                          offsets, partitions, produce)
    return HANDLERS
