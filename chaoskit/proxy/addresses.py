"""`host:port` strings as Toxiproxy takes them: parse, resolve, bind a listener, format back.

Errors read like a real Toxiproxy's ("listen tcp 127.0.0.1:3310: bind: address already in use").
An empty host means loopback here (a real Toxiproxy would bind every interface): the proxy binds
to 127.0.0.1 unless told otherwise, e.g. with "0.0.0.0:PORT".
"""
from __future__ import annotations

import socket

from chaoskit.proxy.errors import BAD_REQUEST_BODY, listen_error

LOOPBACK = "127.0.0.1"


def split_host_port(address: str) -> tuple[str, int]:
    """("h", p) from "h:p" or "[v6]:p"; ValueError with Go's wording when it is not one."""
    if address.startswith("["):
        host, sep, rest = address[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f"address {address}: missing port in address")
        port_text = rest[1:]
    else:
        host, sep, port_text = address.rpartition(":")
        if not sep:
            raise ValueError(f"address {address}: missing port in address")
        if ":" in host:
            raise ValueError(f"address {address}: too many colons in address")
    if not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"address {address}: invalid port")
    return host, int(port_text)


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def resolve(address: str) -> tuple[int, tuple]:
    """(family, sockaddr) for a listen address, IPv4 first as Go does; ValueError when it cannot."""
    host, port = split_host_port(address)
    try:
        infos = socket.getaddrinfo(host or LOOPBACK, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise ValueError(f"lookup {host}: no such host") from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, _, _, _, sockaddr = infos[0]
    return family, sockaddr


def canonical(address: str) -> str:
    """The address as the listener would report it, for deciding whether a proxy changed."""
    try:
        _, sockaddr = resolve(address or f"{LOOPBACK}:0")
    except ValueError:
        return address
    return format_address(sockaddr[0], sockaddr[1])


def bind_listener(address: str) -> socket.socket:
    """A listening, non-blocking socket on `address` ("" = loopback, any port); ApiError (500) if not."""
    try:
        family, sockaddr = resolve(address or f"{LOOPBACK}:0")
    except ValueError as e:
        raise listen_error(f"listen tcp: {e}") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go's listeners do
        sock.bind(sockaddr)
        sock.listen(512)
        sock.setblocking(False)
    except OSError as e:
        sock.close()
        reason = (e.strerror or str(e)).lower()
        raise listen_error(f"listen tcp {format_address(sockaddr[0], sockaddr[1])}: bind: {reason}") from None
    return sock


def bound_address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return format_address(host, port)


def upstream_address(upstream: str) -> tuple[str, int]:
    """Where to dial for a proxy's upstream. A real Toxiproxy takes any string and fails every
    connection later; we refuse one that is not host:port up front (400)."""
    try:
        return split_host_port(upstream)
    except ValueError as e:
        raise BAD_REQUEST_BODY.joined(f"upstream {e}") from None
