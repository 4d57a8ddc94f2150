"""`python -m chaoskit.broker --config FILE`: run one broker until SIGTERM or SIGINT.

Logs go to stderr. Once the broker serves and is registered in ZooKeeper it prints one line
`READY {"broker_id": ..., "listener": "h:p", "advertised": "h:p"}` to stdout. A bad config or a
port in use exits with code 2 and one line saying what to fix; unreachable ZooKeeper with code 1.
"""
from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys

from chaoskit.broker.config import BrokerConfig
from chaoskit.broker.service import BrokerService, StartupError
from chaoskit.broker.zk import ZkUnavailable
from chaoskit.protocol.node_config import config_from_args


async def run(config: BrokerConfig) -> int:
    service = BrokerService(config)
    try:
        await service.start()
    except StartupError as e:
        print(f"chaoskit.broker: {e}", file=sys.stderr)
        await service.stop()
        return 2
    except ZkUnavailable as e:
        print(f"chaoskit.broker: {e}", file=sys.stderr)
        await service.stop()
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ready = {"broker_id": config.broker_id, "listener": "%s:%d" % config.listener,
             "advertised": "%s:%d" % config.advertised}
    print("READY " + json.dumps(ready), flush=True)
    await stop.wait()
    logging.getLogger("chaoskit.broker").info("stopping")
    await service.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    config = config_from_args(argv, "broker", BrokerConfig.load)
    return config if isinstance(config, int) else asyncio.run(run(config))


if __name__ == "__main__":
    sys.exit(main())
