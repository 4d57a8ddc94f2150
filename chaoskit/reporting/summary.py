"""Static HTML pages: each run's own (reports/runs/<id>/index.html: its verdict, every witness, its
plots and a link to every file it left), and a summary of one or more runs side by side (the
verdict table, the figures of each run, its plots, its replay command and a link to its page).
`make demo` and `chaoskit nightly` write summaries. They need no server and no network (plots sit
beside them, styles are inline), so they open from disk.

The page marks itself when every plot has loaded (`data-plots-loaded` on <body>), so a headless
browser test can tell a page that renders from one whose images are broken.
"""
from __future__ import annotations

import html
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Iterable

from chaoskit.checkers.situate import cited_ops, witness_text

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1d1d1f; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: .35em .7em; text-align: left; vertical-align: top; }
th { background: #f3f3f5; }
.clean { background: #dff5e1; } .anomaly { background: #fbdcdc; } .expected { background: #dde8f7; } .unknown { background: #fff1c9; } .unjudged { color: #777; }
code { background: #f3f3f5; padding: .1em .3em; border-radius: 3px; }
.plots img { max-width: 46%; margin: .5em; border: 1px solid #ddd; }
"""
ON_LOAD = """
<script>
  // a headless test reads this: every plot decoded, or which did not
  window.addEventListener("load", function () {
    var imgs = Array.prototype.slice.call(document.querySelectorAll("img"));
    var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
    document.body.setAttribute("data-plots-loaded", broken.length === 0 ? "all" : "broken:" + broken.length);
  });
</script>
"""


def _word(valid: Any) -> tuple[str, str]:
    if valid is True:
        return "clean", "clean"
    if valid is False:
        return "anomaly", "anomaly"
    return "unknown", "unknown"


def _e(value: Any) -> str:
    return html.escape(str(value))


def write_summary(results: Iterable[Any], out_dir: Path, title: str, plots: dict[str, list[Path]] | None = None,
                  note: str = "") -> Path:
    """index.html in `out_dir` for `results` (RunResults), with their plots copied beside it, each
    run's section linking to the run's own page."""
    results = list(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = plots or {}
    sections = [_run_section(r, out_dir, _copied(r, out_dir, plots.get(r.run_id, []))) for r in results]
    return _page(out_dir / "index.html", title, note, results, "".join(sections))


def write_run_page(result: Any) -> Path:
    """run_dir/index.html: the run's verdict, every witness, its figures and replay, its plots at full
    size and a link to every file the run left (history, results.json, test.json, schedule, node
    and Spark logs). Written when the run ends, and again once its plots are drawn."""
    run_dir = Path(result.run_dir)
    images = sorted((run_dir / "plots").glob("*.png")) if (run_dir / "plots").is_dir() else []
    links = [f"plots/{i.name}" for i in images]
    artifacts = "".join(f"<li><a href='{_e(rel)}'>{_e(rel)}</a> <small>{_size(run_dir / rel)}</small></li>"
                        for rel in _artifacts(run_dir))
    body = (_run_section(result, run_dir, links, own_page=True)
            + f"<h3>files</h3><ul class='artifacts'>{artifacts}</ul>")
    return _page(run_dir / "index.html", f"{result.test.name}: {result.test.profile} ({result.run_id})", "",
                 [result], body)


def page_quietly(result: Any) -> None:
    """write_run_page, where a page that fails is logged and never hides the verdict."""
    try:
        write_run_page(result)
    except Exception as e:  # noqa: BLE001 -- the page is a view of results written already
        logging.getLogger("chaoskit.reporting").warning("the page of run %s: %r", result.run_id, e)


def _page(path: Path, title: str, note: str, results: list[Any], body: str) -> Path:
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{STYLE}</style>"
            f"</head><body><h1>{_e(title)}</h1>{f'<p>{_e(note)}</p>' if note else ''}"
            f"{_verdict_table(results)}{body}{ON_LOAD}</body></html>\n")
    path.write_text(page)
    return path


def _verdict_table(results: list[Any]) -> str:
    checks = sorted({name for r in results for name in r.verdict.results})
    head = "".join(f"<th>{_e(r.test.name)}<br>{_e(r.test.profile)}, {_e(r.test.client)} client</th>" for r in results)
    rows = []
    overall = "".join(f'<td class="{r.shown[1]}"><b>{r.shown[0]}</b><br><small>{_e(r.verdict.tally)}'
                      f'</small></td>' for r in results)
    rows.append(f"<tr><th>verdict</th>{overall}</tr>")
    for name in checks:
        cells = []
        for r in results:
            check = r.verdict.results.get(name)
            if check is None:
                cells.append("<td>-</td>")
                continue
            word, css = check.word, _word(check.valid)[1] if check.judged else "unjudged"
            counts = ", ".join(f"{k} {v}" for k, v in sorted(check.counts.items()))
            witness = witness_text(check.witnesses[0]) if check.witnesses else (check.error or "")
            cells.append(f'<td class="{css}">{word}<br><small>{_e(counts)}</small>'
                         f'{"<br><small>" + _e(str(witness)[:600]) + "</small>" if witness else ""}</td>')
        rows.append(f"<tr><th>{_e(name)}</th>{''.join(cells)}</tr>")
    return f"<table id='verdicts'><tr><th>check</th>{head}</tr>{''.join(rows)}</table>"


def _copied(result: Any, out_dir: Path, plots: list[Path]) -> list[str]:
    """The run's plots copied beside a summary; their links from it."""
    links = []
    for plot in plots:
        target = out_dir / "plots" / f"{result.run_id}-{plot.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(plot, target)
        links.append(f"plots/{target.name}")
    return links


def _artifacts(run_dir: Path) -> list[str]:
    """Every file the run left, relative to its folder (the page itself aside), top level first."""
    files = [p for p in run_dir.rglob("*") if p.is_file() and p.name != "index.html"]
    return sorted((str(p.relative_to(run_dir)) for p in files), key=lambda r: (r.count("/"), r))


def _size(path: Path) -> str:
    n = path.stat().st_size
    return f"{n} B" if n < 1024 else f"{n / 1024:.0f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def _op_links(w: Any, to_timeline: str | None) -> str:
    """Links from a witness to its ops in the run's timeline."""
    if not to_timeline:
        return ""
    ops = sorted(set(cited_ops(w).values()))
    return (" <small>in the timeline: " + ", ".join(f"<a class='op-link' href='{_e(to_timeline)}#op-{i}'>op {i}</a>"
                                                     for i in ops) + "</small>") if ops else ""


def _run_section(result: Any, out_dir: Path, images: list[str], own_page: bool = False) -> str:
    stats = result.stats
    figures = (f"{stats.get('ops', 0)} ops, {stats.get('acked', 0)} acknowledged writes, "
               f"cluster up in {stats.get('cluster_up_s', '?')} s, run {stats.get('run_seconds', '?')} s, "
               f"seed {result.test.seed}")
    error = f"<p class='unknown'>run error: {_e(result.error)}</p>" if result.error else ""
    if result.verdict.valid == "unknown":
        error += f"<p class='unknown'>unknown: {_e(result.verdict.reason)}</p>"
    if stats.get("availability"):
        from chaoskit.history.availability import describe

        figures += f"; availability: {describe(stats['availability'])}"
    timeline = Path(result.run_dir) / "timeline.html"
    to_timeline = os.path.relpath(timeline, out_dir) if timeline.exists() else None
    witnesses = "".join(f"<h3>{_e(name)}: {len(check.witnesses)} witness(es)</h3><ol class='witnesses'>"
                        + "".join(f"<li>{_e(witness_text(w))}{_op_links(w, to_timeline)}</li>" for w in check.witnesses)
                        + "</ol>" for name, check in sorted(result.verdict.results.items())
                        if check.valid is False and check.witnesses)
    if to_timeline:
        witnesses += f"<p><a class='timeline' href='{_e(to_timeline)}'>the timeline</a>: every op in time, the faults</p>"
    page = "" if own_page else (f"<p>the run's page, with every file it left: <a class='run-page' href='"
                                f"{_e(os.path.relpath(Path(result.run_dir) / 'index.html', out_dir))}'>"
                                f"{_e(result.run_id)}</a></p>")
    plots = "".join(f"<a href='{_e(i)}'><img src='{_e(i)}' alt='{_e(Path(i).stem)}'></a>" for i in images)
    return (f"<h2>{_e(result.test.name)}: {_e(result.test.profile)}</h2>{error}<p>{_e(figures)}</p>{witnesses}{page}"
            f"<p>history and logs: <code>{_e(result.run_dir)}</code></p>"
            + "".join(f"<p>replay: <code>{_e(c)}</code></p>" for c in result.replays)
            + f"<div class='plots'>{plots}</div>")


def plot_run(result: Any) -> list[Path]:
    """The run's plots (latency/throughput with fault windows, key-order timelines) in run_dir/plots
    and its timeline.html, then its page again with them; a plot that fails is noted in the run's
    stats, never hides its verdict."""
    try:
        from chaoskit.history.reader import History
        from chaoskit.reporting.plots import plot_verdict
        from chaoskit.reporting.timeline import write_timeline

        if not result.history.exists():
            return []
        ops = History.from_path(result.history).ops
        plots = list(plot_verdict(result.verdict, ops, result.run_dir / "plots"))
        write_timeline(result, ops)
        write_run_page(result)  # now with its plots and timeline
        return plots
    except Exception as e:  # noqa: BLE001 -- see above
        result.stats["plot_error"] = f"{type(e).__name__}: {e}"
        return []
