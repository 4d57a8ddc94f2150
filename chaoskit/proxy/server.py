"""Run the fault proxy's API server until SIGTERM or SIGINT.

Once it serves it prints one line to stdout, `READY {"api": "http://h:p", "host", "port", "seed",
"version", "run_id"}` (with `--port 0` that is how a caller learns the port). Logs go to stderr. A port in
use or a bad `--config` file exits with code 2 and one line saying what to fix.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path

from chaoskit.proxy.api import VERSION, ToxiproxyApi
from chaoskit.proxy.errors import ApiError
from chaoskit.proxy.http_server import start_http_server

log = logging.getLogger("chaoskit.proxy")


class StartupError(Exception):
    """The server cannot start; the message says why and what to do."""


async def populate_from_file(api: ToxiproxyApi, path: Path) -> None:
    """Toxiproxy's -config: a JSON array of proxies, created before the API serves."""
    try:
        items = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise StartupError(f"cannot read the proxy list {path}: {e}") from None
    try:
        await api.populate_from(items, [])
    except ApiError as e:
        raise StartupError(f"{path}: {e.message}") from None
    log.info("populated %d proxies from %s", len(api.proxies), path)


async def serve(host: str, port: int, seed: int, config: Path | None = None, run_id: str | None = None) -> int:
    api = ToxiproxyApi(seed)
    try:
        if config is not None:
            await populate_from_file(api, config)
        try:
            server = await start_http_server(api.handle, host, port)
        except OSError as e:
            reason = os.strerror(e.errno).lower() if e.errno else str(e)
            raise StartupError(f"cannot listen on {host}:{port}: {reason}; "
                               "pick another --port (0 picks a free one)") from None
    except StartupError as e:
        print(f"chaoskit proxy: {e}", file=sys.stderr)
        await api.shutdown()
        return 2
    bound = server.sockets[0].getsockname()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ready = {"api": f"http://{host}:{bound[1]}", "host": host, "port": bound[1], "seed": seed,
             "version": VERSION, "run_id": run_id}
    log.info("serving Toxiproxy's API on %s (seed %d, run %s)", ready["api"], seed, run_id)
    print("READY " + json.dumps(ready), flush=True)
    await stop.wait()
    log.info("stopping")
    server.close()
    await api.shutdown()
    return 0
