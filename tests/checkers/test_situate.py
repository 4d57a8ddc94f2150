"""Witnesses in time (chaoskit.checkers.situate): a witness names when its ops ran, where the records
were, and the fault and admin windows open then or just before, not the ones long before or after."""
from __future__ import annotations

from pathlib import Path

from chaoskit.run.checks import run_checks
from chaoskit.checkers.situate import witness_text
from chaoskit.history import synthetic
from chaoskit.history.parquet import read_parquet
from chaoskit.history.reader import History


def nemesis(f: str, t_s: float, window: int, fault: str, **value) -> dict:
    return {"process": "nemesis", "type": "info", "f": f, "time_ns": int(t_s * 1e9),
            "value": {"fault": fault, "window": window, **value}}


def with_windows(ops: list[dict], *windows: list[dict]) -> list[dict]:
    """`ops` with nemesis ops merged in time order, re-indexed."""
    merged = sorted([*ops, *(op for w in windows for op in w)], key=lambda op: op.get("time_ns", 0))
    return [{**op, "index": i} for i, op in enumerate(merged)]


def test_a_key_order_witness_names_its_deliveries_and_the_expansion_before_them(tmp_path: Path):
    ops = synthetic.generate(seed=1, events=1500, plant=["key-order"]).ops
    expand = {"target": "client", "params": {"op": "expand", "topic": "orders", "to": 6}}
    late = [nemesis("start", 30.0, 2, "kill", target="random-broker", resolved={"broker": 3}),
            nemesis("stop", 31.0, 2, "kill")]
    history = History(with_windows(ops, [nemesis("start", 0.5, 1, "admin", **expand),
                                         nemesis("stop", 0.6, 1, "admin")], late))
    w = run_checks(history, engine="local").results["key-order"].witnesses[0]
    delivered = [p for p in w["ops"] if p["field"].endswith("_delivered")]
    assert len(delivered) == 2 and all({"topic", "partition", "offset", "t_s", "process"} <= set(p) for p in delivered)
    assert {p["partition"] for p in delivered} == {w["first_partition"], w["second_partition"]}
    assert [f["what"] for f in w["faults"]] == ["expand orders to 6"]  # the kill at 30 s is not in view
    text = witness_text(w)
    assert text.startswith(w["explanation"]) and "expand orders to 6 0.50-0.60 s" in text
    assert f"{delivered[0]['t_s']:.2f} s" in text


def test_a_witness_with_nothing_around_says_so_and_parquet_reads_only_what_it_cites(tmp_path: Path):
    ops = synthetic.generate(seed=2, events=1500, plant=["lost-write"]).ops
    history = History(with_windows(ops, [nemesis("start", 40.0, 1, "pause", target="leader-of:orders/0",
                                                 resolved={"broker": 1}), nemesis("stop", 41.0, 1, "pause")]))
    w = run_checks(history, engine="local").results["lost-write"].witnesses[0]
    assert w["faults"] == [] and "no fault or admin change then" in w["when"]
    source = history.to_parquet(tmp_path / "h.parquet")
    some = read_parquet(source, {w["index"]}, ("nemesis",))
    assert [op["index"] for op in some if op["process"] != "nemesis"] == [w["index"]]
    assert [op["index"] for op in some if op["process"] == "nemesis"] == [
        op["index"] for op in history.ops if op["process"] == "nemesis"]


def test_a_window_begins_when_its_start_began_not_when_it_was_recorded():
    # an expansion's start is recorded once its partitions exist; a send to one of them came before that
    ops = synthetic.generate(seed=1, events=1500, plant=["key-order"]).ops
    w = run_checks(History(ops), engine="local").results["key-order"].witnesses[0]
    t = min(p["t_s"] for p in w["ops"])
    expand = {"target": "client", "params": {"op": "expand", "topic": "orders", "to": 6}}
    slow = [nemesis("start", t + 1.0, 1, "admin", **expand, took_s=1.5), nemesis("stop", t + 1.2, 1, "admin")]
    late = [nemesis("start", t + 1.0, 2, "admin", **expand), nemesis("stop", t + 1.2, 2, "admin")]
    for windows, seen in ((slow, True), (late, False)):
        history = History(with_windows(ops, windows))
        found = run_checks(history, engine="local").results["key-order"].witnesses[0]
        first = min(p["t_s"] for p in found["ops"])
        assert any(f["start_s"] <= first for f in found["faults"]) is seen, found["faults"]


def test_a_write_never_read_names_the_windows_after_it_and_other_checks_do_not():
    ops = synthetic.generate(seed=2, events=1500, plant=["lost-write"]).ops
    shrink = {"target": "client", "params": {"op": "shrink", "topic": "orders", "to": 2, "delay_ms": 3000}}
    history = History(with_windows(ops, [nemesis("start", 40.0, 1, "admin", **shrink), nemesis("stop", 40.5, 1, "admin")]))
    results = run_checks(history, engine="local").results
    w = results["lost-write"].witnesses[0]
    assert "shrink orders to 2" in [f["what"] for f in w["faults_after"]]
    text = witness_text(w)
    assert "; after it: " in text and "shrink orders to 2 40.00-40.50 s" in text.split("; after it: ")[1]
    judged = [x for name, r in results.items() if name not in ("lost-write", "unseen") for x in r.witnesses]
    assert all("faults_after" not in x for x in judged)
