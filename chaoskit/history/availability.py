"""Availability of a run, from its history: acknowledged writes per second in and out of each fault
window, and the stretches after a heal when the workload made no progress (Jepsen's rate plots,
as figures).

    availability(ops) -> {"acked_per_s": 41.0, "windows": [{"window": 3, "fault": "partition",
                          "seconds": 2.1, "acked_per_s": 12.4}, ...],
                          "stalled": [{"window": 3, "fault": "partition", "for_s": 6.2}]}

A heal is a nemesis `stop` op; the workload is stalled after it when no send is acknowledged for
`STALL_S` seconds from it, or none at all from it to the producers' last attempt (then the stall
lasted at least that long). A heal after the producers' last attempt judges nothing.
"""
from __future__ import annotations

import bisect
from typing import Any, Iterable

STALL_S = 5.0  # longer than any fault window's own effect should last once healed
NS = 1e9


def availability(ops: Iterable[dict[str, Any]], stall_s: float = STALL_S) -> dict[str, Any]:
    acks: list[int] = []
    tried = None  # the producers' last send invoke
    starts: dict[Any, tuple[int, str]] = {}
    windows: list[tuple[Any, str, int, int]] = []  # window, fault, start ns, stop ns
    for op in ops:
        t = op.get("time_ns")
        if t is None:
            continue
        if op.get("f") == "send" and op.get("type") == "ok":
            acks.append(t)
        elif op.get("f") == "send" and op.get("type") == "invoke":
            tried = t if tried is None else max(tried, t)
        elif op.get("process") == "nemesis" and isinstance(op.get("value"), dict):
            window, fault = op["value"].get("window"), op["value"].get("fault")
            if op.get("f") == "start":
                starts[window] = (t, fault)
            elif op.get("f") == "stop" and window in starts:
                begun, fault = starts.pop(window)
                windows.append((window, fault, begun, t))
    acks.sort()
    span = (acks[-1] - acks[0]) / NS if len(acks) > 1 else 0.0
    out: dict[str, Any] = {"acked": len(acks), "acked_per_s": round(len(acks) / span, 1) if span > 0 else 0.0,
                           "windows": [], "stalled": []}
    for window, fault, begun, ended in sorted(windows, key=lambda w: w[2]):
        seconds = (ended - begun) / NS
        n = bisect.bisect_right(acks, ended) - bisect.bisect_left(acks, begun)
        out["windows"].append({"window": window, "fault": fault, "seconds": round(seconds, 2),
                               "acked_per_s": round(n / seconds, 1) if seconds > 0 else 0.0})
        i = bisect.bisect_left(acks, ended)
        until = acks[i] if i < len(acks) else tried
        if until is None or until <= ended:
            continue  # healed after the producers' last attempt: nothing left to make progress
        wait = (until - ended) / NS
        if wait >= stall_s:
            out["stalled"].append({"window": window, "fault": fault, "for_s": round(wait, 1),
                                   "recovered": i < len(acks)})
    return out


def describe(figures: dict[str, Any]) -> str:
    """One line for a terminal or a report."""
    text = f"{figures['acked_per_s']:g} acknowledged writes/s"
    if figures["windows"]:
        low = min(figures["windows"], key=lambda w: w["acked_per_s"])
        text += f"; lowest in a fault window: {low['acked_per_s']:g}/s ({low['fault']} #{low['window']})"
    for s in figures["stalled"]:
        text += (f"; STALLED {s['for_s']:g} s after {s['fault']} #{s['window']} healed"
                 f"{'' if s['recovered'] else ' (never recovered)'}")
    return text
