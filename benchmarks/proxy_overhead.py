"""What the fault proxy costs: added latency and throughput through one proxy, against a direct
connection to the same loopback server.

A loopback server runs in its own process (an echo for round trips; for throughput it swallows a
stream and answers its byte count at the end of it). Our proxy runs as `python -m chaoskit.proxy`
(ProxyServer). The client is this process: blocking sockets, TCP_NODELAY.

- latency: N round trips of a 64-byte message on one connection; p50 and p99 of each path, the
  proxy's added time, and the ratio proxied / direct;
- throughput: M MB sent one way in 64 KiB writes, repeated R times (median); MB/s of each path
  and the ratio, also with a noop toxic on each direction (the toxic chain's own cost).

Usage: python benchmarks/proxy_overhead.py [--pings N] [--megabytes M] [--repeat R]
"""
from __future__ import annotations

import argparse
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from chaoskit.cluster.proxy_node import ProxyServer
from chaoskit.proxy import ToxiproxyClient

CHUNK = 64 * 1024


# --- the loopback server, run as a child process of this script -------------------------------------
def serve(kind: str) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)

    def echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(CHUNK):
                conn.sendall(data)

    def sink(conn: socket.socket) -> None:
        with conn:
            total = 0
            while data := conn.recv(CHUNK):
                total += len(data)
            conn.sendall(struct.pack(">Q", total))

    handler = echo if kind == "echo" else sink
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=handler, args=(conn,), daemon=True).start()


def start_server(kind: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


# --- measurements ------------------------------------------------------------------------------
def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def round_trips(port: int, count: int) -> list[float]:
    message, times = b"x" * 64, []
    with connect(port) as sock:
        for _ in range(count):
            start = time.perf_counter()
            sock.sendall(message)
            got = 0
            while got < len(message):
                got += len(sock.recv(len(message) - got))
            times.append(time.perf_counter() - start)
    return times


def throughput(port: int, megabytes: int) -> float:
    """MB/s of one stream of `megabytes` MB, counted until the server confirms it got every byte."""
    block, total = b"\0" * CHUNK, megabytes * 1_000_000
    with connect(port) as sock:
        start = time.perf_counter()
        sent = 0
        while sent < total:
            sock.sendall(block[: min(CHUNK, total - sent)])
            sent += min(CHUNK, total - sent)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while len(answer) < 8:
            answer += sock.recv(8 - len(answer))
        took = time.perf_counter() - start
    assert struct.unpack(">Q", answer)[0] == total, "the server did not get every byte"
    return total / 1e6 / took


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pings", type=int, default=3000)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", choices=["echo", "sink"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return

    echo, echo_port = start_server("echo")
    sink, sink_port = start_server("sink")
    try:
        with tempfile.TemporaryDirectory() as tmp, ProxyServer(run_id="bench", workdir=Path(tmp), seed=1) as server:
            client: ToxiproxyClient = server.client()
            echo_proxy = client.create_proxy("echo", f"127.0.0.1:{echo_port}").address[1]
            sink_proxy = client.create_proxy("sink", f"127.0.0.1:{sink_port}").address[1]

            round_trips(echo_port, 200)  # warm up both paths
            round_trips(echo_proxy, 200)
            direct, proxied = round_trips(echo_port, args.pings), round_trips(echo_proxy, args.pings)
            print(f"round trips of 64 bytes, {args.pings} each (ms):")
            print(f"  {'':10} {'p50':>8} {'p99':>8}")
            for label, times in (("direct", direct), ("proxied", proxied)):
                print(f"  {label:10} {percentile(times, 50) * 1e3:8.3f} {percentile(times, 99) * 1e3:8.3f}")
            for p in (50, 99):
                added = percentile(proxied, p) - percentile(direct, p)
                ratio = percentile(proxied, p) / percentile(direct, p)
                print(f"  added p{p}: {added * 1e3:.3f} ms (proxied/direct {ratio:.2f}x)")

            def median_rate(port: int) -> float:
                return statistics.median(throughput(port, args.megabytes) for _ in range(args.repeat))

            print(f"throughput, {args.megabytes} MB one way, median of {args.repeat} (MB/s):")
            base = median_rate(sink_port)
            plain = median_rate(sink_proxy)
            client.add_toxic("sink", "noop", stream="upstream")
            client.add_toxic("sink", "noop", stream="downstream")
            chained = median_rate(sink_proxy)
            for label, rate in (("direct", base), ("proxied", plain), ("noop each way", chained)):
                print(f"  {label:14} {rate:9.1f}  ({rate / base:.2f}x direct)")
    finally:
        for proc in (echo, sink):
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
