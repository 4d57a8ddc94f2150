"""The value parsers of the broker's and the controller's JSON config files (docs/internals.md §1).

Both processes parse their files with these, so they accept and refuse exactly the same spellings.
A config is a JSON object of Kafka-style keys; a `Spec` maps each key to (attribute, parser,
default) and `parse_spec` checks an object against it. A parser is `parser(key, value) -> value`
and raises ConfigError naming the key, what was given and what is allowed. `load_config_file` reads one
from its file, and `config_from_args` is the command line both nodes take to load it.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

Parser = Callable[[str, Any], Any]
# key -> (attribute, parser, default); a default of REQUIRED must be given.
Spec = dict[str, tuple[str, Parser, Any]]
REQUIRED = object()
MAX_MS = 2**31 - 1  # a Java int, as Kafka's millisecond settings are


class ConfigError(ValueError):
    """A config file the process cannot run with; the message says what to change."""


def load_config_file(path: str | Path, from_dict: Callable[[Any], Any]) -> Any:
    """`from_dict` of the JSON in the file at `path`; an unreadable file, bad JSON or a bad value is a
    ConfigError that names the file."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from e
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    try:
        return from_dict(raw)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from e


def config_from_args(argv: list[str] | None, node: str, load: Callable[[str], Any]) -> Any:
    """The command line both `python -m chaoskit.broker` and `python -m chaoskit.controller` take
    (--config FILE, --log-level): logging set up on stderr, then `load(FILE)`'s config, or exit code 2
    after one line saying what to fix in the file."""
    parser = argparse.ArgumentParser(prog=f"python -m chaoskit.{node}", description=f"Run one chaoskit {node}.")
    parser.add_argument("--config", required=True, metavar="FILE", help=f"the {node}'s JSON config (docs/internals.md)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    try:
        return load(args.config)
    except ConfigError as e:
        print(f"chaoskit.{node}: {e}", file=sys.stderr)
        return 2


def parse_address(key: str, value: Any, *, allow_port_zero: bool = False) -> tuple[str, int]:
    """("host", port) from "host:port" (a "PLAINTEXT://" prefix is accepted, as Kafka writes it)."""
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a \"host:port\" string, got {value!r}")
    text = value.split("://", 1)[1] if "://" in value else value
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ConfigError(f"{key}: {value!r} is not \"host:port\" (e.g. \"127.0.0.1:9092\")")
    port = int(port_text)
    if not (0 if allow_port_zero else 1) <= port <= 65535:
        what = "0-65535" if allow_port_zero else "1-65535 (port 0 is refused: the backend chooses ports)"
        raise ConfigError(f"{key}: port {port} is out of range; use {what}")
    return host, port


def parse_int(lo: int, hi: int = 2**31 - 1) -> Callable[[str, Any], int]:
    """A parser of integers in lo..hi (a string of digits is accepted, a bool is not)."""
    def check(key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            else:
                raise ConfigError(f"{key}: expected an integer, got {value!r}")
        if not lo <= value <= hi:
            raise ConfigError(f"{key}: {value} is out of range; allowed {lo}..{hi}")
        return value
    return check


def parse_bool(key: str, value: Any) -> bool:
    """true or false, as a JSON bool or a string in any case."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def parse_str(key: str, value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key}: expected a non-empty string, got {value!r}")
    return value


def parse_zk_connect(key: str, value: Any) -> str:
    """ZooKeeper's connect string, "host:port[,host:port...][/chroot]", checked and kept as given."""
    for part in parse_str(key, value).split(","):
        parse_address(key, part.split("/", 1)[0])
    return value


def parse_peers(key: str, value: Any) -> dict[int, tuple[str, int]]:
    """{broker id: (host, port)} from a JSON object {"<broker id>": "host:port"}."""
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected an object {{\"<broker id>\": \"host:port\"}}, got {value!r}")
    peers = {}
    for bid, addr in value.items():
        if not str(bid).isdigit():
            raise ConfigError(f"{key}: {bid!r} is not a broker id (a non-negative integer)")
        peers[int(bid)] = parse_address(f"{key}[{bid}]", addr)
    return peers


def parse_names(known: Iterable[str], what: str) -> Callable[[str, Any], frozenset[str]]:
    """A set of names, each one of `known`, from a comma-separated string or a JSON list."""
    allowed = frozenset(known)

    def parse(key: str, value: Any) -> frozenset[str]:
        names = value.split(",") if isinstance(value, str) else value
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{key}: expected a comma-separated string or a list of names, got {value!r}")
        chosen = frozenset(n.strip() for n in names if n.strip())
        unknown = sorted(chosen - allowed)
        if unknown:
            raise ConfigError(f"{key}: unknown {what}(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}")
        return chosen
    return parse


def parse_spec(raw: Any, spec: Spec) -> dict[str, Any]:
    """{attribute: value} for a JSON object of Kafka-style keys checked against spec; ConfigError
    names an unknown key, a missing required one, or a bad value."""
    if not isinstance(raw, dict):
        raise ConfigError(f"the config must be a JSON object of Kafka-style keys, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(spec))
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: {', '.join(sorted(spec))}")
    values: dict[str, Any] = {}
    for key, (attr, parse, default) in spec.items():
        if raw.get(key) is not None:
            values[attr] = parse(key, raw[key])
        elif default is REQUIRED:
            raise ConfigError(f"{key} is required (see docs/internals.md §1)")
        else:
            values[attr] = default
    return values
