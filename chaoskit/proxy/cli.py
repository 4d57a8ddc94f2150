"""`chaoskit proxy` (and `python -m chaoskit.proxy`): run the Toxiproxy-compatible fault proxy."""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address the HTTP API binds (default 127.0.0.1; proxies bind loopback unless told otherwise)")
    parser.add_argument("--port", type=int, default=8474, help="API port (default 8474, Toxiproxy's; 0 picks a free one)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for toxicity draws, jitter and slice sizes (default: random, printed in the READY line)")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="JSON array of proxies to create at start, as Toxiproxy's -config")
    parser.add_argument("--run-id", default=None,
                        help="the chaoskit run this server belongs to (a label for the reaper and the log)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def register(sub) -> None:
    p = sub.add_parser("proxy", help="run the fault proxy: a server of Toxiproxy's HTTP API",
                       description="Run TCP proxies with toxics (latency, bandwidth, timeout, reset_peer, ...) "
                                   "driven through Toxiproxy's v2 HTTP API; toxiproxy clients work unchanged.")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from chaoskit.proxy.server import serve
    from chaoskit.roles import new_seed

    logging.basicConfig(stream=sys.stderr, level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    seed = args.seed if args.seed is not None else new_seed()
    return asyncio.run(serve(args.host, args.port, seed, args.config, args.run_id))
