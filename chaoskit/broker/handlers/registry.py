"""The table of request handlers by API key, which each handler module fills as it is imported
(`@handles(key, ...)`); the package's `load_all` imports them all and returns it."""
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
