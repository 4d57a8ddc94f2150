"""`python -m chaoskit.controller --config FILE`: run one controller until SIGTERM or SIGINT.

Logs go to stderr. Once connected to ZooKeeper and through its first election round it prints
`READY {"controller_id": C, "active": bool, "epoch": E|null}` to stdout. A bad config exits with
code 2 and one line saying what to fix; unreachable ZooKeeper with code 1.
"""
from __future__ import annotations

import json
import logging
import signal
import sys
import threading

from chaoskit.controller.config import ControllerConfig
from chaoskit.controller.controller import Controller, ZkUnreachable
from chaoskit.protocol.node_config import config_from_args


def run(config: ControllerConfig) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    controller = Controller(config)
    try:
        controller.start(timeout=max(10.0, 2 * config.zookeeper_session_timeout_ms / 1000))
    except ZkUnreachable as e:
        print(f"chaoskit.controller: {e}", file=sys.stderr)
        controller.client.close()
        return 1
    try:
        while not controller.first_round.wait(0.1):
            if stop.is_set():
                return 0
        ctx = controller.ctx
        ready = {"controller_id": config.controller_id, "active": ctx is not None,
                 "epoch": ctx.epoch if ctx is not None else None}
        print("READY " + json.dumps(ready), flush=True)
        stop.wait()
        logging.getLogger("chaoskit.controller").info("stopping")
    finally:
        controller.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    config = config_from_args(argv, "controller", ControllerConfig.load)
    return config if isinstance(config, int) else run(config)


if __name__ == "__main__":
    sys.exit(main())
