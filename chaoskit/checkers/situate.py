"""Witnesses in time: each witness of a verdict gains where its ops stand in the run, and what the
faults and admin changes were doing then, so a reader names the cause without opening the history.

A witness cites ops by their history index (`index`, `first_delivered`, ...). `situate` adds:
- `ops`: each cited op's time since the run's start (s), process, kind, and, where the op holds
  them (a send's, or the poll's record of the witness's value), topic, partition and offset;
- `faults`: every fault and admin window (kind, target, start, end in s) open at one of those
  times or closed within LOOKBACK_S before the first; `faults_after`, for a write lost or never
  read, the first windows that opened after it (a removal or an election is the cause there);
- `when`: the two as one line ("at 7.50 s (poll by 4 of orders/1@12), 8.00 s (...); faults: expand
  orders to 6 on client 5.10-5.50 s"), which the terminal, the pages, Allure and results.json show
  after the witness's explanation (`witness_text`).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from chaoskit.history.schema import Op, poll_records

OP_FIELDS = ("index", "first_delivered", "second_delivered", "mode_index")  # witness fields naming ops
VALUE_FIELDS = ("value", "first", "second")  # witness fields naming the records it is about
LOOKBACK_S = 5.0
# checks whose cause comes after the op they cite (a removal, an election losing the write): their
# witnesses also name the first MAX_AFTER windows that opened after it
CAUSED_AFTER = frozenset({"lost-write", "unseen"})
MAX_AFTER = 5
MAX_WITNESSES = 50  # per check: situated ones (a page shows no more)


def windows(ops: Iterable[Op]) -> list[dict[str, Any]]:
    """Each nemesis window, in start order: kind, target (the node(s) it resolved to where it says),
    what it did (an admin change's op, topic and count), start and end (s; one never stopped ends at
    the last op)."""
    started: dict[Any, dict[str, Any]] = {}
    out, last = [], 0.0
    for op in ops:
        t = (op.get("time_ns") or 0) / 1e9
        last = max(last, t)
        v = op.get("value")
        if op.get("process") != "nemesis" or not isinstance(v, dict):
            continue
        wid = v.get("window", v.get("fault"))
        if op.get("f") == "start" and wid not in started:  # recorded once started: it began took_s before
            took = v.get("took_s") if isinstance(v.get("took_s"), (int, float)) else 0.0
            started[wid] = {"kind": str(v.get("fault")), "target": _target(v), "what": _what(v),
                            "start_s": max(0.0, t - took)}
        elif op.get("f") == "stop" and wid in started:
            out.append({**started.pop(wid), "end_s": t})
    out += [{**w, "end_s": last} for w in started.values()]
    return sorted(out, key=lambda w: (w["start_s"], w["kind"]))


def _target(v: Mapping[str, Any]) -> str:
    """The node(s) a window hit, where its start says so ({"broker": 2}, "broker-3", [...]), else its
    target spec ("leader-of:orders/0", "client")."""
    resolved = v.get("resolved")
    if isinstance(resolved, dict):
        for kind in ("broker", "controller", "node"):
            if isinstance(resolved.get(kind), (int, str)):
                return f"{kind}-{resolved[kind]}" if isinstance(resolved[kind], int) else resolved[kind]
        resolved = resolved.get("nodes") or resolved.get("brokers")
    if isinstance(resolved, list) and resolved and all(isinstance(x, (int, str)) for x in resolved):
        return ",".join(map(str, resolved))
    if isinstance(resolved, str) and resolved:
        return resolved
    return str(v.get("target") or "")


def _what(v: Mapping[str, Any]) -> str:
    p = v.get("params") if isinstance(v.get("params"), dict) else {}
    if v.get("fault") == "admin" and p.get("op"):
        return " ".join(str(x) for x in (p["op"], p.get("topic"), f"to {p['to']}" if "to" in p else "") if x)
    if isinstance(p.get("action"), str):
        return p["action"]
    return ""


def label(w: Mapping[str, Any]) -> str:
    """A window as a person names it: "expand orders to 6", "kill broker-3", "clients idle client"."""
    if w["kind"] == "admin" and w.get("what"):
        return w["what"]
    return " ".join(x for x in (w["kind"], w.get("what"), w.get("target")) if x)


def situate(results: Mapping[str, Any], history: Any) -> None:
    """Add `ops`, `faults` and `when` to the witnesses of `results` (CheckResults by name) from
    `history` (a History: its ops when loaded, else only the cited and the nemesis's from its Parquet)."""
    cited = {i for r in results.values() for w in r.witnesses[:MAX_WITNESSES] for i in cited_ops(w).values()}
    if not cited:
        return
    if history.loaded or history.source is None:
        ops = history.ops
    else:
        from chaoskit.history.parquet import read_parquet
        ops = read_parquet(history.source, cited, ("nemesis",))
    by_index = {op.get("index"): op for op in ops if op.get("index") in cited}
    spans = windows(ops)
    for name, r in results.items():
        for w in r.witnesses[:MAX_WITNESSES]:
            placed = [_placed(field, by_index[i], w) for field, i in cited_ops(w).items() if i in by_index]
            if not placed:
                continue
            first, last = min(p["t_s"] for p in placed), max(p["t_s"] for p in placed)
            near = [_rounded(s) for s in spans if s["start_s"] <= last and s["end_s"] >= first - LOOKBACK_S]
            w["ops"], w["faults"] = placed, near
            if name in CAUSED_AFTER:
                w["faults_after"] = [_rounded(s) for s in spans if s["start_s"] > last][:MAX_AFTER]
            w["when"] = when(placed, near, w.get("faults_after", []))


def cited_ops(w: Mapping[str, Any]) -> dict[str, int]:
    """The ops a witness cites: its field -> history index."""
    return {f: w[f] for f in OP_FIELDS if isinstance(w.get(f), int) and not isinstance(w.get(f), bool)}


def _placed(field: str, op: Op, w: Mapping[str, Any]) -> dict[str, Any]:
    out = {"field": field, "op": op.get("index"), "t_s": round((op.get("time_ns") or 0) / 1e9, 3),
           "process": op.get("process"), "f": op.get("f"), "type": op.get("type")}
    where = {k: op[k] for k in ("topic", "partition", "offset") if op.get(k) is not None}
    if op.get("f") == "poll" and op.get("type") == "ok":  # the delivered record the witness is about
        wanted = _own_value(field, w) or {str(w[f]) for f in VALUE_FIELDS if w.get(f) is not None}
        for partition, offset, _key, value, _epoch in poll_records(op):
            if value in wanted:
                where.update(partition=partition, offset=offset)
                break
    return {**out, **where}


def _own_value(field: str, w: Mapping[str, Any]) -> set[str]:
    """The record a delivery field is about: key-order's first_delivered delivered `first`."""
    own = {"first_delivered": "first", "second_delivered": "second"}.get(field)
    return {w[own]} if own and isinstance(w.get(own), str) else set()


def _rounded(span: dict[str, Any]) -> dict[str, Any]:
    return {**span, "start_s": round(span["start_s"], 2), "end_s": round(span["end_s"], 2)}


def _spans_text(spans: Iterable[dict[str, Any]]) -> str:
    return "; ".join(f"{label(s)} {s['start_s']:.2f}-{s['end_s']:.2f} s" for s in spans)


def when(placed: list[dict[str, Any]], near: list[dict[str, Any]], after: list[dict[str, Any]] = ()) -> str:
    ops = ", ".join(f"{p['t_s']:.2f} s ({p['f']} by {p['process']}"
                    + (f" of {p['topic']}/{p['partition']}@{p['offset']}" if "offset" in p else "") + ")"
                    for p in sorted(placed, key=lambda p: p["t_s"]))
    faults, later = _spans_text(near), _spans_text(after)
    return (f"at {ops}; " + (f"faults then or just before: {faults}" if faults else "no fault or admin change then")
            + (f"; after it: {later}" if later else ""))


SITUATING = ("ops", "faults", "faults_after", "when")  # what situate adds: a view of the run, not part of what was found


FAULT_COUNTS = ("acked_after_fault",)  # counts taken against the run's faults (lost-write's, unseen's)


def unsituated(result: Mapping[str, Any]) -> dict[str, Any]:
    """A result's JSON without what situate added to its witnesses, nor the counts taken against the
    run's faults (to compare what two checks found where one history lost the run's faults, as an
    export does)."""
    counts = {k: v for k, v in result.get("counts", {}).items() if k not in FAULT_COUNTS}
    return {**result, "counts": counts, "witnesses": [{k: v for k, v in w.items() if k not in SITUATING}
                                                      for w in result.get("witnesses", [])]}


def witness_text(w: Mapping[str, Any]) -> str:
    """A witness as one line: its explanation, then when (if situated)."""
    text = str(w.get("explanation", w))
    return f"{text} [{w['when']}]" if w.get("when") else text
