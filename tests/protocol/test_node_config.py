"""The config value parsers the broker and the controller share: what each accepts, and that a
refusal names the key and what is allowed."""
from __future__ import annotations

import pytest

from chaoskit.protocol.node_config import (MAX_MS, REQUIRED, ConfigError, parse_address, parse_bool, parse_int,
                                           parse_peers, parse_spec, parse_zk_connect)


def test_parsers_accept_kafkas_spellings():
    assert parse_address("k", "PLAINTEXT://h:9092") == ("h", 9092)
    assert parse_address("k", "h:0", allow_port_zero=True) == ("h", 0)
    assert parse_int(0)("k", "17") == 17 and parse_int(0, MAX_MS)("k", MAX_MS) == MAX_MS
    assert parse_bool("k", "TRUE") is True and parse_bool("k", False) is False
    assert parse_zk_connect("k", "a:1,b:2/chroot") == "a:1,b:2/chroot"
    assert parse_peers("k", {"2": "h:7"}) == {2: ("h", 7)}


@pytest.mark.parametrize("parse,value,words", [
    (parse_address, "h:0", ["k:", "port 0 is refused"]),
    (parse_int(1, 5), 6, ["k:", "allowed 1..5"]),
    (parse_int(0), True, ["k:", "expected an integer"]),
    (parse_bool, "yes", ["k:", "true or false"]),
    (parse_zk_connect, "h:x", ["k:", "host:port"]),
    (parse_peers, {"b": "h:1"}, ["k:", "not a broker id"]),
])
def test_a_refusal_names_the_key_and_what_is_allowed(parse, value, words):
    with pytest.raises(ConfigError) as e:
        parse("k", value)
    assert all(w in str(e.value) for w in words)


def test_parse_spec_fills_defaults_and_names_unknown_and_missing_keys():
    spec = {"a.b": ("a_b", parse_int(0), REQUIRED), "c": ("c", parse_bool, False)}
    assert parse_spec({"a.b": 3}, spec) == {"a_b": 3, "c": False}
    with pytest.raises(ConfigError, match="unknown key.*'x'"):
        parse_spec({"a.b": 3, "x": 1}, spec)
    with pytest.raises(ConfigError, match="a.b is required"):
        parse_spec({"c": True}, spec)


def test_the_nodes_command_line_loads_the_config_or_exits_2_with_one_line(tmp_path, capsys):
    from chaoskit.protocol.node_config import config_from_args

    def load(path: str) -> dict:
        if path.endswith("bad.json"):
            raise ConfigError("num.partitions: expected an integer, got 'x'")
        return {"from": path}

    assert config_from_args(["--config", "good.json"], "broker", load) == {"from": "good.json"}
    assert config_from_args(["--config", "bad.json", "--log-level", "DEBUG"], "controller", load) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["chaoskit.controller: num.partitions: expected an integer, got 'x'"]
