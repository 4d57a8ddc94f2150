"""Plots where a picture says more than a table (matplotlib, Agg: no display needed).

* latency.png: each client op's latency against the time it was invoked, by outcome (Jepsen's
  latency-raw), fault windows shaded by kind and labelled with kind and target;
* throughput.png: completions per second by outcome, fault windows shaded and labelled;
* key-order-<n>.png: for each key-order witness (a few), every delivery of that key's records,
  offset against time, coloured by partition, with the two records out of order marked and the
  fault and admin windows (an expansion, say) shaded and labelled.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from chaoskit.checkers.situate import label, windows
from chaoskit.history.schema import Op, poll_records, value_text

MAX_POINTS = 100_000  # a latency plot of millions of points says no more than one of this many
MAX_KEY_PLOTS = 3
OUTCOME_COLOURS = {"ok": "tab:blue", "info": "tab:orange", "fail": "tab:red"}


def _pyplot() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def latencies(ops: Iterable[Op]) -> list[tuple[float, float, str, str]]:
    """(invoke time s, latency s, outcome, f) of each completed client op: a process's invoke pairs
    with its next completion, as in Jepsen (a process does one thing at a time)."""
    open_: dict[Any, Op] = {}
    out = []
    for op in ops:
        proc, kind = op.get("process"), op.get("type")
        if not isinstance(proc, int) or op.get("time_ns") is None:
            continue
        if kind == "invoke":
            open_[proc] = op
        elif proc in open_ and open_[proc].get("f") == op.get("f"):
            inv = open_.pop(proc)
            out.append((inv["time_ns"] / 1e9, (op["time_ns"] - inv["time_ns"]) / 1e9, kind, op.get("f")))
    return out


def fault_windows(ops: Iterable[Op]) -> list[tuple[float, float, str]]:
    """(start s, stop s, label) for each nemesis window, labelled by kind and target ("kill broker-3",
    "expand orders to 6"); one never stopped lasts to the last op."""
    return [(w["start_s"], w["end_s"], label(w)) for w in windows(ops)]


def _shade(ax: Any, spans: list[tuple[float, float, str]], lanes: int = 4) -> None:
    """Each window shaded in its kind's colour and labelled at the top (labels staggered over
    `lanes` rows so that neighbours do not overwrite each other)."""
    colours: dict[str, Any] = {}
    palette = ["tab:grey", "tab:purple", "tab:olive", "tab:cyan", "tab:brown", "tab:pink", "tab:green"]
    for i, (s, e, name) in enumerate(spans):
        kind = name.split(" ")[0]
        colour = colours.setdefault(kind, palette[len(colours) % len(palette)])
        ax.axvspan(s, max(e, s + 1e-3), color=colour, alpha=0.15, lw=0)
        ax.text(s, 1 - 0.06 * (i % lanes), name, transform=ax.get_xaxis_transform(), fontsize=6, va="top",
                color=colour, clip_on=True)


def plot_latency(ops: list[Op], out: Path) -> Path:
    plt = _pyplot()
    points = latencies(ops)
    stride = max(1, len(points) // MAX_POINTS)
    fig, ax = plt.subplots(figsize=(10, 4))
    _shade(ax, fault_windows(ops))
    for outcome, colour in OUTCOME_COLOURS.items():
        pts = [p for p in points[::stride] if p[2] == outcome]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] * 1000 for p in pts], s=2, c=colour, label=outcome, alpha=0.6)
    ax.set_yscale("log") if points else None
    ax.set(xlabel="time (s)", ylabel="latency (ms)", title="latency of client ops")
    ax.legend(loc="upper right", markerscale=4)
    return _save(fig, plt, out)


def plot_throughput(ops: list[Op], out: Path, bucket_s: float = 1.0) -> Path:
    plt = _pyplot()
    counts: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for t, _lat, outcome, _f in latencies(ops):
        counts[outcome][int(t // bucket_s)] += 1
    fig, ax = plt.subplots(figsize=(10, 4))
    _shade(ax, fault_windows(ops))
    for outcome, colour in OUTCOME_COLOURS.items():
        series = counts.get(outcome)
        if series:
            xs = range(min(series), max(series) + 1)
            ax.plot([x * bucket_s for x in xs], [series.get(x, 0) / bucket_s for x in xs], c=colour, label=outcome)
    ax.set(xlabel="time (s)", ylabel="ops/s", title="throughput of client ops")
    ax.legend(loc="upper right")
    return _save(fig, plt, out)


def plot_key_order(ops: list[Op], witness: dict[str, Any], out: Path) -> Path:
    """Every delivery of the witness's key: offset against time, one colour per partition."""
    plt = _pyplot()
    key = witness.get("key")
    marked = {witness.get("first"): "first sent", witness.get("second"): "second sent"}
    by_partition: dict[int, list[tuple[float, int]]] = defaultdict(list)
    marks = []
    for op in ops:
        if op.get("f") != "poll" or op.get("type") != "ok":
            continue
        t = (op.get("time_ns") or 0) / 1e9
        for p, o, k, v, _e in poll_records(op):
            if k == key:
                by_partition[p].append((t, o))
                if v in marked:
                    marks.append((t, o, marked[v]))
    fig, ax = plt.subplots(figsize=(8, 4))
    _shade(ax, fault_windows(ops))  # the admin changes and faults around the out-of-order deliveries
    for p, pts in sorted(by_partition.items()):
        ax.scatter([x for x, _ in pts], [y for _, y in pts], s=12, label=f"partition {p}")
    for t, o, mark in marks:
        ax.annotate(mark, (t, o), textcoords="offset points", xytext=(5, 5), fontsize=8,
                    arrowprops={"arrowstyle": "-", "lw": 0.5})
    ax.ticklabel_format(useOffset=False, style="plain")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set(xlabel="delivered at (s)", ylabel="offset", title=f"key {key}: deliveries (key-order witness)")
    ax.legend(loc="best", fontsize=8)
    return _save(fig, plt, out)


def _save(fig: Any, plt: Any, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def plot_verdict(verdict: Any, ops: list[Op], out_dir: str | Path) -> list[Path]:
    """The run's plots into out_dir; returns their paths."""
    out_dir = Path(out_dir)
    paths = [plot_latency(ops, out_dir / "latency.png"), plot_throughput(ops, out_dir / "throughput.png")]
    key_order = verdict.results.get("key-order")
    if key_order is not None and key_order.valid is False:
        for n, w in enumerate(key_order.witnesses[:MAX_KEY_PLOTS]):
            paths.append(plot_key_order(ops, w, out_dir / f"key-order-{n}.png"))
    return paths


__all__ = ["plot_verdict", "latencies", "fault_windows", "value_text"]
