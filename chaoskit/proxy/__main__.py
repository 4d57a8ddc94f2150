"""`python -m chaoskit.proxy [--host H] [--port P] [--seed N] [--config FILE]`: the fault proxy."""
from __future__ import annotations

import argparse
import sys

from chaoskit.proxy.cli import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaoskit.proxy",
                                     description="A server of Toxiproxy's HTTP API: TCP proxies with toxics.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
