"""`chaoskit cluster up`: run a cluster in the foreground until SIGINT or SIGTERM.

`--backend local` (the default) runs the nodes as child processes; `--backend docker` as
containers (images built first when their inputs changed).

Once every node is ready it prints one JSON object (run id, bootstrap servers, ZooKeeper address,
every node with its id, role, pid, ports and log; with --proxied the proxy API URL and every link
with its listen and upstream address) on one line to stdout, and to --json-file if given. Ctrl-C or SIGTERM stops the nodes in reverse order; if this process is killed outright,
the run's reaper kills the nodes.

Exit codes: 0 stopped cleanly, 1 a node did not come up (its log tail says why), 3 bad input (no
Docker engine answering, an output it cannot write, a proxy that does not answer), before any node
starts.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from chaoskit.cluster.backends import BACKENDS
from chaoskit.cluster.spec import PROFILES, ClusterSpec


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small; at least 1")
    return value


def register(sub: Any) -> None:
    cluster = sub.add_parser("cluster", help="run a cluster (ZooKeeper, controllers, brokers) locally or in containers")
    actions = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    up = actions.add_parser("up", help="start a cluster in the foreground; Ctrl-C stops it",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    up.add_argument("--broker", default="chaoskit", help="the broker: chaoskit (its own, default) or one a plugin adds "
                                                         "(tansu)")
    up.add_argument("--broker-storage", help="its storage engine, for a broker that has them (tansu: sqlite, "
                                             "default, postgres or memory)")
    up.add_argument("--brokers", type=_positive, default=3, help="brokers (default 3; tansu: that many over "
                                                                 "postgres, one otherwise)")
    up.add_argument("--controllers", type=_positive, default=1, help="controllers (default 1)")
    up.add_argument("--zookeepers", type=_positive, default=1, help="ZooKeeper nodes, odd (default 1)")
    up.add_argument("--backend", choices=BACKENDS, default="local",
                    help="local: child processes (default); docker: containers on a private network")
    up.add_argument("--profile", choices=PROFILES, default="patched",
                    help="patched: every proposal on; unpatched: Kafka before them (default patched)")
    up.add_argument("--proxied", action="store_true",
                    help="every path (client, broker, controller, ZooKeeper) through its own fault proxy; "
                         "the JSON gains the proxy API URL and the link names")
    up.add_argument("--proxy-url", metavar="URL",
                    help="with --proxied: use this running Toxiproxy API instead of starting chaoskit's own")
    up.add_argument("--seed", type=int, default=0, help="seed of the fault proxy's random draws (default 0)")
    up.add_argument("--json-file", type=Path, help="also write the cluster's JSON description here")
    up.add_argument("--out", "--run-dir", dest="run_dir", type=Path,
                    help="the cluster's own folder for logs and data (default reports/runs/<run id>)")
    up.set_defaults(func=cluster_up)
    down = actions.add_parser("down", help="kill every process of a run left up (e.g. by --chaos-keep)")
    down.add_argument("run_id", metavar="RUN_ID", help="the run id (the name of its reports/runs/ folder)")
    down.set_defaults(func=cluster_down)


def cluster_down(args: argparse.Namespace) -> int:
    from chaoskit.run.options import UsageError
    from chaoskit.cluster.reaper import reap

    if not args.run_id.strip() or "/" in args.run_id or not args.run_id.isprintable():
        raise UsageError(f"{args.run_id!r} is not a run id; name a folder of reports/runs/, e.g. 20261129-160036-3891-1")
    killed = reap(args.run_id)
    print(f"run {args.run_id}: {killed} process(es) killed" if killed else f"run {args.run_id}: nothing running")
    return 0


def _make_cluster(backend: str, spec: ClusterSpec, test: Any = None) -> Any:
    from chaoskit.run.options import UsageError
    from chaoskit.cluster.docker_engine import EngineUnavailable
    from chaoskit.pluginmanager import broker_kind

    if backend != "local" and spec.proxy_url is not None:
        raise UsageError("--proxy-url is for the local backend; the docker backend runs its own proxy container")
    try:
        kind = broker_kind(getattr(test, "broker", None))
        why = kind.unavailable(getattr(test, "broker_storage", None))
        if why:
            raise UsageError(why)
        return kind.new_cluster(backend, spec, test)
    except (EngineUnavailable, ValueError) as e:
        raise UsageError(str(e)) from None


def _preflight(args: argparse.Namespace) -> None:
    """Bad input found before any node starts: an output that cannot be written, a proxy that does not answer."""
    from chaoskit.run.options import UsageError
    from chaoskit.proxy.client import ProxyServerUnreachable, ToxiproxyClient

    if args.json_file is not None and args.json_file.is_dir():
        raise UsageError(f"--json-file {args.json_file} is a folder; name a file")
    if args.run_dir is not None and args.run_dir.exists() and not args.run_dir.is_dir():
        raise UsageError(f"--out {args.run_dir} is a file; name a folder (it is created when missing)")
    if args.proxy_url is not None and args.proxied:
        try:
            ToxiproxyClient(args.proxy_url, timeout=5).version()
        except (ProxyServerUnreachable, ValueError) as e:  # ValueError: not a URL at all
            raise UsageError(f"--proxy-url {args.proxy_url}: {e}") from None


def cluster_up(args: argparse.Namespace) -> int:
    from chaoskit.run.options import UsageError

    from chaoskit.run.chaostest import ChaosTest, on_its_broker

    _preflight(args)
    try:
        test = on_its_broker(ChaosTest("cluster", broker=args.broker, broker_storage=args.broker_storage,
                                       brokers=args.brokers))
        spec = ClusterSpec(brokers=test.brokers, controllers=args.controllers, zookeepers=args.zookeepers,
                           profile=args.profile, run_dir=args.run_dir, proxied=args.proxied,
                           proxy_url=args.proxy_url, seed=args.seed)
    except ValueError as e:
        raise UsageError(str(e)) from e
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        if not stop.is_set():
            stop.set()
            raise KeyboardInterrupt  # interrupts a start in progress as well as the wait

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    cluster = _make_cluster(args.backend, spec, test)
    try:
        cluster.start()
        description = json.dumps(cluster.describe())
        if args.json_file is not None:
            args.json_file.parent.mkdir(parents=True, exist_ok=True)
            args.json_file.write_text(description + "\n")
        print(description, flush=True)
        print(f"cluster {spec.run_id} is up: bootstrap {cluster.bootstrap_servers}; Ctrl-C stops it",
              file=sys.stderr, flush=True)
        stop.wait()
    except KeyboardInterrupt:
        pass
    except Exception as e:  # a node that did not come up: say which and why, with its log tail
        print(f"chaoskit cluster up: {e}", file=sys.stderr)
        return 1
    finally:
        for s in previous:
            signal.signal(s, signal.SIG_IGN)  # let the teardown finish
        print(f"stopping cluster {spec.run_id}", file=sys.stderr, flush=True)
        cluster.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0
