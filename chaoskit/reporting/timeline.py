"""timeline.html: a run's ops in time, as Jepsen's timeline draws them.

A lane per process; each op a bar from its invoke to its completion, coloured by outcome (ok,
fail, info); the fault windows as bands across every lane, labelled by kind and target; admin
changes as vertical markers; the ops the verdict's witnesses cite outlined and anchored
(`timeline.html#op-<index>`), so the run's page links each witness to its place in time. Static
HTML with inline styles: it opens from disk. A long run keeps every op near a witness or a fault
and a sample of the rest (MAX_OPS), so the page stays light.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Iterable

from chaoskit.checkers.situate import cited_ops, label, windows
from chaoskit.history.schema import Op

PX_PER_S = 120
LANE_PX = 22
MAX_OPS = 6000
COLOURS = {"ok": "#3a9a4a", "fail": "#c0392b", "info": "#e0a800", "invoke": "#888"}
STYLE = """
body { font: 12px/1.4 system-ui, sans-serif; margin: 1em; }
.tl { position: relative; border-top: 1px solid #ccc; }
.lane { position: absolute; left: 0; height: %(lane)dpx; border-bottom: 1px solid #eee; width: 100%%; }
.name { position: sticky; left: 0; background: #fff; padding: 0 .4em; font-weight: bold; z-index: 3; }
.op { position: absolute; height: %(bar)dpx; min-width: 2px; opacity: .85; }
.op.witness { outline: 3px solid #000; z-index: 2; opacity: 1; }
.fault { position: absolute; top: 0; bottom: 0; background: rgba(120, 80, 160, .12); border-left: 1px solid #a890c0; }
.fault span { position: absolute; top: 2px; left: 2px; font-size: 10px; color: #553; white-space: nowrap; }
.admin { position: absolute; top: 0; bottom: 0; border-left: 2px dashed #1f5fa0; }
.admin span { position: absolute; bottom: 2px; left: 3px; font-size: 10px; color: #1f5fa0; white-space: nowrap; }
.axis { position: absolute; top: 0; bottom: 0; border-left: 1px dotted #ddd; font-size: 9px; color: #999; }
"""


def write_timeline(result: Any, ops: list[Op], path: Path | None = None) -> Path:
    """Write the run's timeline.html (beside its history unless `path`); its path."""
    path = path or Path(result.run_dir) / "timeline.html"
    cited = {i: name for name, check in result.verdict.results.items() if check.valid is False
             for w in check.witnesses for i in cited_ops(w).values()}
    spans = windows(ops)
    bars = _bars(ops)
    kept = _kept(bars, cited, spans)
    processes = sorted({b["process"] for b in kept}, key=lambda p: (not isinstance(p, int), str(p) if
                                                                    not isinstance(p, int) else f"{p:09d}"))
    lane = {p: i for i, p in enumerate(processes)}
    end = max([b["end"] for b in kept] + [w["end_s"] for w in spans] + [1.0])
    width, height = int(end * PX_PER_S) + 200, len(processes) * LANE_PX + 30
    parts = [f"<div class='axis' style='left:{int(t * PX_PER_S) + 60}px'>{t} s</div>" for t in range(int(end) + 1)]
    for w in spans:
        left, right = _x(w["start_s"]), _x(w["end_s"])
        if w["kind"] == "admin":
            parts.append(f"<div class='admin' style='left:{left}px' title='{_e(label(w))}'><span>{_e(label(w))} "
                         f"{w['start_s']:.2f} s</span></div>")
        else:
            parts.append(f"<div class='fault' style='left:{left}px;width:{max(2, right - left)}px' "
                         f"title='{_e(label(w))} {w['start_s']:.2f}-{w['end_s']:.2f} s'><span>{_e(label(w))}</span></div>")
    for p in processes:
        parts.append(f"<div class='lane' style='top:{lane[p] * LANE_PX + 14}px'><span class='name'>{_e(p)}</span></div>")
    for b in kept:
        of = next((cited[i] for i in sorted(b["ids"]) if i in cited), None)
        anchors = "".join(f"<span id='op-{i}'></span>" for i in sorted(b["ids"] - {b["index"]}))  # its invoke's too
        parts.append(f"<div class='op{' witness' if of else ''}' id='op-{b['index']}' "
                     f"style='left:{_x(b['start'])}px;width:{max(2, _x(b['end']) - _x(b['start']))}px;"
                     f"top:{lane[b['process']] * LANE_PX + 17}px;background:{COLOURS.get(b['type'], '#888')}' "
                     f"title='{_e(_title(b, of))}'>{anchors}</div>")
    shown = f"{len(kept)} of {len(bars)} ops" if len(kept) < len(bars) else f"{len(bars)} ops"
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>timeline {_e(result.run_id)}</title>"
            f"<style>{STYLE % {'lane': LANE_PX, 'bar': LANE_PX - 8}}</style></head><body>"
            f"<h1>timeline of {_e(result.test.name)} ({_e(result.test.profile)}, {_e(result.run_id)})</h1>"
            f"<p>{shown}: a lane per process, a bar per op from invoke to completion (green ok, red fail, "
            f"yellow info); bands: fault windows; dashed lines: admin changes; outlined: the ops the "
            f"witnesses cite. <a href='index.html'>the run's page</a></p>"
            f"<div class='tl' id='timeline' style='width:{width}px;height:{height}px'>{''.join(parts)}</div>"
            f"</body></html>\n")
    path.write_text(page)
    return path


def _bars(ops: Iterable[Op]) -> list[dict[str, Any]]:
    """Each client op from invoke to completion (Jepsen's pairing: a process does one thing at a
    time); a single op (a nemesis's, a partition mode) is a bar of its own moment."""
    open_: dict[Any, Op] = {}
    out = []
    for op in ops:
        proc, kind, t = op.get("process"), op.get("type"), (op.get("time_ns") or 0) / 1e9
        if proc == "nemesis" or proc is None:
            continue
        if kind == "invoke":
            open_[proc] = op
            continue
        inv = open_.pop(proc, None) if proc in open_ and open_[proc].get("f") == op.get("f") else None
        start = (inv.get("time_ns") or 0) / 1e9 if inv is not None else t
        out.append({"process": proc, "f": op.get("f"), "type": kind, "start": start, "end": t,
                    "index": op.get("index"), "invoked": inv.get("index") if inv is not None else None,
                    "value": op.get("value"), "partition": op.get("partition"), "offset": op.get("offset")})
    for proc, inv in open_.items():  # never completed: info to the end of the history
        t = (inv.get("time_ns") or 0) / 1e9
        out.append({"process": proc, "f": inv.get("f"), "type": "info", "start": t, "end": t, "index": inv.get("index"),
                    "invoked": inv.get("index"), "value": inv.get("value"), "partition": None, "offset": None})
    for b in out:  # a witness may cite the invoke: the bar answers to both
        b["ids"] = {b["index"], b["invoked"]} - {None}
    return out


def _kept(bars: list[dict[str, Any]], cited: dict[int, str], spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every bar when they are few; else those near a witness or a fault's edge, and a sample of the rest."""
    if len(bars) <= MAX_OPS:
        return bars
    moments = [b["start"] for b in bars if b["ids"] & set(cited)] + [t for w in spans for t in (w["start_s"], w["end_s"])]
    near = [b for b in bars if b["ids"] & set(cited) or any(abs(b["start"] - m) < 1.0 for m in moments)]
    rest = [b for b in bars if b not in near]
    step = max(1, len(rest) // max(1, MAX_OPS - len(near)))
    return sorted(near + rest[::step], key=lambda b: b["start"])


def _title(b: dict[str, Any], witness_of: str | None) -> str:
    where = f" {b['partition']}@{b['offset']}" if b.get("offset") is not None else ""
    head = f"op {b['index']}: {b['f']} {b['type']} by {b['process']}{where}, {b['start']:.3f}-{b['end']:.3f} s"
    value = str(b["value"])[:200] if b.get("value") is not None else ""
    return f"{head}{' (witness of ' + witness_of + ')' if witness_of else ''}\n{value}"


def _x(t: float) -> int:
    return int(t * PX_PER_S) + 60


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)
