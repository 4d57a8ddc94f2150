"""Toxiproxy's HTTP API as a real Toxiproxy answers it: shapes, status codes and error bodies, and
bad input that gets a clear error and leaves the server serving (ported from Toxiproxy's api_test)."""
from __future__ import annotations

import socket
import threading
import time

import pytest


def make_proxy(raw_http, name: str, upstream: str, **extra) -> dict:
    status, body = raw_http("POST", "/proxies", {"name": name, "upstream": upstream, "listen": "127.0.0.1:0", **extra})
    assert status == 201, body
    return body


def still_serving(raw_http) -> None:
    status, body = raw_http("GET", "/version")
    assert status == 200 and body["version"].startswith("2.")


def test_proxy_shapes_and_codes(raw_http, echo):
    created = make_proxy(raw_http, "mysql_master", echo.address)
    assert created == {"name": "mysql_master", "listen": created["listen"], "upstream": echo.address,
                       "enabled": True, "toxics": []}
    assert raw_http("GET", "/proxies") == (200, {"mysql_master": created})
    assert raw_http("GET", "/proxies/mysql_master") == (200, created)
    assert raw_http("DELETE", "/proxies/mysql_master") == (204, None)
    assert raw_http("DELETE", "/proxies/mysql_master") == (404, {"error": "proxy not found", "status": 404})
    assert raw_http("GET", "/proxies") == (200, {})


def test_toxic_shapes_and_codes(raw_http, echo):
    make_proxy(raw_http, "p", echo.address)
    status, toxic = raw_http("POST", "/proxies/p/toxics", {"type": "latency", "attributes": {"latency": 100, "jitter": 10}})
    assert status == 200  # creating a toxic answers 200, not 201, as Toxiproxy
    assert toxic == {"attributes": {"latency": 100, "jitter": 10}, "name": "latency_downstream",
                     "type": "latency", "stream": "downstream", "toxicity": 1.0}
    _, up = raw_http("POST", "/proxies/p/toxics", {"name": "cut", "type": "limit_data", "stream": "upstream"})
    assert up["attributes"] == {"bytes": 0}
    # upstream toxics are listed first, then downstream, each in the order added
    assert raw_http("GET", "/proxies/p/toxics") == (200, [up, toxic])
    assert raw_http("GET", "/proxies/p")[1]["toxics"] == [up, toxic]
    assert raw_http("GET", "/proxies/p/toxics/cut") == (200, up)
    # an update changes only what it names (Toxiproxy's TestUpdateToxics)
    status, updated = raw_http("PATCH", "/proxies/p/toxics/latency_downstream",
                               {"toxicity": 0.5, "attributes": {"latency": 1000}})
    assert status == 200 and updated["toxicity"] == 0.5 and updated["attributes"] == {"latency": 1000, "jitter": 10}
    _, updated = raw_http("POST", "/proxies/p/toxics/latency_downstream", {"attributes": {"latency": 500}})
    assert updated["toxicity"] == 0.5 and updated["attributes"] == {"latency": 500, "jitter": 10}
    assert raw_http("DELETE", "/proxies/p/toxics/cut") == (204, None)
    assert raw_http("DELETE", "/proxies/p/toxics/cut") == (404, {"error": "toxic not found", "status": 404})
    assert raw_http("GET", "/proxies/p/toxics/cut")[0] == 404
    assert raw_http("GET", "/proxies/nope/toxics") == (404, {"error": "proxy not found", "status": 404})


@pytest.mark.parametrize("body,status,error", [
    ({"name": "", "upstream": ""}, 400, "missing required field: name"),
    ({"name": "test", "upstream": ""}, 400, "missing required field: upstream"),
    ({"name": "test", "upstream": "localhost"}, 400, "bad request body: upstream address localhost: missing port in address"),
    ({"name": "test", "upstream": "127.0.0.1:1", "enabled": "yes"}, 400, "bad request body: enabled must be a boolean, got 'yes'"),
    ([1, 2], 400, "bad request body: expected a JSON object with name, listen, upstream and enabled, got [1, 2]"),
    ({"name": "test", "upstream": "127.0.0.1:1", "listen": "local373"}, 500, "listen tcp: address local373: missing port in address"),
])
def test_bad_proxy_requests(raw_http, body, status, error):
    assert raw_http("POST", "/proxies", body) == (status, {"error": error, "status": status})
    assert raw_http("GET", "/proxies") == (200, {})
    still_serving(raw_http)


def test_malformed_json_and_empty_body(raw_http, echo):
    status, body = raw_http("POST", "/proxies", raw=b'{"name": "x", "upstream": ')
    assert status == 400 and body["status"] == 400 and body["error"].startswith("bad request body: invalid JSON")
    status, body = raw_http("POST", "/proxies", raw=b"")
    assert status == 400 and body["error"].startswith("bad request body: EOF")
    make_proxy(raw_http, "p", echo.address)
    status, body = raw_http("POST", "/proxies/p/toxics", raw=b"{nope")
    assert status == 400 and body["error"].startswith("bad request body")
    still_serving(raw_http)


def test_duplicate_names_conflict(raw_http, echo):
    first = make_proxy(raw_http, "mysql_master", echo.address)
    assert raw_http("POST", "/proxies", {"name": "mysql_master", "upstream": echo.address}) == \
        (409, {"error": "proxy already exists", "status": 409})
    raw_http("POST", "/proxies/mysql_master/toxics", {"name": "foobar", "type": "latency", "stream": "upstream"})
    # a toxic name is unique across both streams (TestAddConflictingToxicsMultistream)
    assert raw_http("POST", "/proxies/mysql_master/toxics", {"name": "foobar", "type": "slow_close"}) == \
        (409, {"error": "toxic already exists", "status": 409})
    toxics = raw_http("GET", "/proxies/mysql_master/toxics")[1]
    assert [(t["name"], t["type"], t["stream"]) for t in toxics] == [("foobar", "latency", "upstream")]
    assert raw_http("GET", "/proxies/mysql_master")[1]["listen"] == first["listen"]


def test_port_in_use_is_a_500_and_leaves_the_server_serving(raw_http, echo):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        status, body = raw_http("POST", "/proxies", {"name": "test", "listen": f"127.0.0.1:{port}", "upstream": echo.address})
        assert (status, body) == (500, {"error": f"listen tcp 127.0.0.1:{port}: bind: address already in use", "status": 500})
        assert raw_http("GET", "/proxies/test")[0] == 404
        still_serving(raw_http)
    # freed: the same request works (Toxiproxy's TestCreateProxyPortConflict)
    assert raw_http("POST", "/proxies", {"name": "test", "listen": f"127.0.0.1:{port}", "upstream": echo.address})[0] == 201


@pytest.mark.parametrize("body,status,error", [
    ({"type": "walrus"}, 400, "invalid toxic type"),
    ({"type": "latency", "stream": "walrustream"}, 400, "stream was invalid, can be either upstream or downstream"),
    ({"type": "latency", "attributes": {"latency": "100"}}, 400,
     "bad request body: attribute latency of a latency toxic must be a non-negative integer, got '100'"),
    ({"type": "latency", "attributes": {"latancy": 100}}, 400,
     "bad request body: unknown attribute 'latancy' for toxic type latency (it takes: latency, jitter)"),
    ({"type": "bandwidth", "attributes": {"rate": -5}}, 400,
     "bad request body: attribute rate of a bandwidth toxic must be a non-negative integer, got -5"),
    ({"type": "noop", "toxicity": 1.5}, 400,
     "bad request body: toxicity must be a number from 0 to 1 (the share of connections the toxic applies to), got 1.5"),
])
def test_bad_toxic_requests(raw_http, echo, body, status, error):
    make_proxy(raw_http, "p", echo.address)
    assert raw_http("POST", "/proxies/p/toxics", body) == (status, {"error": error, "status": status})
    assert raw_http("GET", "/proxies/p/toxics") == (200, [])
    still_serving(raw_http)


def test_update_proxy_rebinds_and_disables(raw_http, echo, net):
    created = make_proxy(raw_http, "p", echo.address)
    status, body = raw_http("POST", "/proxies/p", {"enabled": False})
    assert status == 200 and body["enabled"] is False and body["listen"] == created["listen"]
    status, body = raw_http("PATCH", "/proxies/p", {"enabled": True, "listen": "127.0.0.1:0"})
    assert status == 200 and body["enabled"] is True and body["listen"] != created["listen"]
    with net.connect(body["listen"]) as sock:
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"
    assert raw_http("PATCH", "/proxies/nope", {"enabled": True}) == (404, {"error": "proxy not found", "status": 404})


def test_populate(raw_http, echo, upstream):
    status, body = raw_http("POST", "/populate", [
        {"name": "one", "listen": "127.0.0.1:0", "upstream": echo.address},
        {"name": "two", "listen": "127.0.0.1:0", "upstream": upstream.address, "enabled": False}])
    assert status == 201 and [(p["name"], p["enabled"]) for p in body["proxies"]] == [("one", True), ("two", False)]
    one = body["proxies"][0]
    raw_http("POST", "/proxies/one/toxics", {"type": "latency"})
    # unchanged listen and upstream: the proxy is kept, toxics and all (TestPopulateExistingProxy)
    status, body = raw_http("POST", "/populate", [{"name": "one", "listen": one["listen"], "upstream": echo.address}])
    assert status == 201 and body["proxies"][0]["toxics"][0]["type"] == "latency"
    # every entry is checked before any is created (TestPopulateWithBadName)
    status, body = raw_http("POST", "/populate", [{"name": "three", "upstream": echo.address}, {"name": ""}])
    assert (status, body) == (400, {"error": "missing required field: name at proxy 2", "status": 400, "proxies": []})
    # a listener that fails stops the populate there; what came before stays (TestPopulateProxyWithBadData...)
    status, body = raw_http("POST", "/populate", [
        {"name": "four", "listen": "127.0.0.1:0", "upstream": echo.address},
        {"name": "five", "listen": "local373", "upstream": echo.address}])
    assert status == 500 and body["error"] == "listen tcp: address local373: missing port in address"
    assert [p["name"] for p in body["proxies"]] == ["four"]
    assert sorted(raw_http("GET", "/proxies")[1]) == ["four", "one", "two"]
    assert raw_http("POST", "/populate", {"name": "x"})[0] == 400


def test_reset_and_version(raw_http, echo):
    make_proxy(raw_http, "p", echo.address, enabled=False)
    raw_http("POST", "/proxies/p/toxics", {"type": "latency", "attributes": {"latency": 100}})
    assert raw_http("POST", "/reset") == (204, None)
    _, proxy = raw_http("GET", "/proxies/p")
    assert proxy["enabled"] is True and proxy["toxics"] == []
    status, version = raw_http("GET", "/version")
    assert status == 200 and set(version) == {"version"}


def test_routing_errors_and_browsers(raw_http):
    assert raw_http("GET", "/nowhere")[0] == 404
    assert raw_http("PUT", "/proxies")[0] == 405
    assert raw_http("GET", "/proxies", headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64)"}) == \
        (403, "User agent not allowed\n")
    assert raw_http("GET", "/proxies", headers={"User-Agent": "Wget/2.1"})[0] == 200


def test_garbage_http_gets_400_and_the_server_goes_on(proxy_server, raw_http):
    for garbage in (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", b"GET /\r\n\r\n",
                    b"POST /proxies HTTP/1.1\r\nContent-Length: lots\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", proxy_server.ready_info["port"]), timeout=5) as sock:
            sock.sendall(garbage)
            answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 4"), answer
    still_serving(raw_http)


def test_api_answers_while_bytes_flow(raw_http, upstream, net):
    proxy = make_proxy(raw_http, "bulk", upstream.address)
    raw_http("POST", "/proxies/bulk/toxics", {"type": "bandwidth", "stream": "upstream", "attributes": {"rate": 2000}})
    client = net.connect(proxy["listen"])
    server = upstream.accept()
    sender = threading.Thread(target=lambda: client.sendall(b"x" * 2_000_000), daemon=True)
    sender.start()
    try:
        server.recv(65536)  # the transfer is under way (it takes about a second)
        start = time.perf_counter()
        for _ in range(10):
            still_serving(raw_http)
        assert time.perf_counter() - start < 1.0
    finally:
        client.close()
        server.close()


def test_reset_resets_every_proxy_it_can_and_names_the_rest(raw_http, echo):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        make_proxy(raw_http, "stuck", echo.address, listen=f"127.0.0.1:{port}", enabled=False)
        make_proxy(raw_http, "fine", echo.address, enabled=False)
        for name in ("stuck", "fine"):
            raw_http("POST", f"/proxies/{name}/toxics", {"type": "latency", "attributes": {"latency": 100}})
        status, body = raw_http("POST", "/reset")
        assert status == 500 and "stuck: listen tcp 127.0.0.1" in body["error"] and "fine" not in body["error"]
        assert raw_http("GET", "/proxies/fine")[1]["enabled"] is True  # the one after it was reset all the same
        assert raw_http("GET", "/proxies/fine")[1]["toxics"] == raw_http("GET", "/proxies/stuck")[1]["toxics"] == []
    assert raw_http("POST", "/reset") == (204, None)  # freed: every proxy enabled
    still_serving(raw_http)


def test_deep_json_and_names_no_path_can_name_are_400(raw_http, echo):
    deep = b"[" * 100_000 + b"]" * 100_000
    status, body = raw_http("POST", "/proxies", raw=deep)
    assert status == 400 and "nested too deeply" in body["error"]
    for name, says in [("x" * 100_000, "at most 255"), ("a/b", "holds '/'"), ("tab\there", "control character")]:
        status, body = raw_http("POST", "/proxies", {"name": name, "upstream": echo.address, "listen": "127.0.0.1:0"})
        assert status == 400 and says in body["error"], body
    longest = make_proxy(raw_http, "n" * 255, echo.address)["name"]
    status, body = raw_http("POST", f"/proxies/{longest}/toxics", {"type": "latency", "name": "t" * 256})
    assert status == 400 and "at most 255" in body["error"]
    assert raw_http("DELETE", f"/proxies/{longest}") == (204, None)  # whatever can be created can be deleted
    still_serving(raw_http)
