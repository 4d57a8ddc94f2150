"""`chaoskit matrix`: does this client keep the promises it claims, against a broker that keeps its side?

Each cell runs one suite's smoke test with one client in one profile, per seed (suite/cells.py).
The suite names its guarantee (run/guarantees.py) and the client says what it claims, so each
cell reads:

- **clean**: the guarantee held (patched: as it must, where claimed or cluster-side);
- **caught**: an anomaly (patched and claimed: a *finding*, written to findings/, shown as
  "anomaly"; unpatched: the broker's side missing, shown as "caught, as expected");
- **unknown**: a run that judged nothing or broke;
- **not claimed**: patched, a client-side guarantee the client does not claim: what was seen is
  shown, not held against it (one seed, the first: a cell that judges nothing needs no more).

The report goes to the output folder: matrix.json (every run), matrix.md (the table the terminal
shows), matrix.html, and findings/<client>-<guarantee>.md for each claimed guarantee a client broke:
client and version, the smallest seed that reproduces it and the run's duration, the witnesses, the
replay command, and the requests the client sent around the anomaly, from the brokers' request logs.
"""
from __future__ import annotations

import argparse
import html
import json
from pathlib import Path
from typing import Any

from chaoskit.suite.cells import SUITES, run_cell

from chaoskit.roles import cell_seeds

from chaoskit.run.files import write_atomically
from chaoskit.run.options import add_broker_options, broker_changes
from chaoskit.run.guarantees import GUARANTEES, claims_of, expectation, library_of

STOCK = ("kafka-python", "librdkafka", "aiokafka")
# the client-side guarantees, one suite each: a cell per client is a run of its smoke test
DEFAULT_SUITES = ("kip253_expansion", "kip320_truncation", "kip694_reduction")
REQUESTS_AROUND = 20  # request-log lines shown around a finding's first witness


def register(sub: Any) -> None:
    p = sub.add_parser("matrix", help="clients x guarantees: each client's suites run, a conformance report",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", default=",".join(STOCK), help=f"comma-separated (default {','.join(STOCK)})")
    p.add_argument("--suites", default=",".join(DEFAULT_SUITES),
                   help=f"comma-separated suite names (default {','.join(DEFAULT_SUITES)})")
    p.add_argument("--profiles", default="patched", choices=("patched", "unpatched", "both"),
                   help="patched (default: does the client keep its promises?), unpatched or both")
    add_broker_options(p)
    p.add_argument("--seeds", type=int, default=3, help="seeds per cell (default 3)")
    p.add_argument("--seed", type=int, help="the seed the cells' seeds are drawn from (default: drawn, printed)")
    p.add_argument("--reports", type=Path, default=Path("reports"), help="where every command's output goes "
                                                                          "(default reports/): matrix/ here")
    p.add_argument("--out", type=Path, default=None, help="the report's own folder (default <reports>/matrix)")
    p.add_argument("--suites-dir", type=Path, default=SUITES, help="where the suite files are (default suites/)")
    p.set_defaults(func=matrix_command)


def guarantee_of(suite: str) -> str | None:
    return next((g.name for g in GUARANTEES.values() if suite in g.suites), None)


def classify(runs: list[dict[str, Any]], expected: str) -> str:
    """A cell's word from its seeds' outcomes and what was expected of it."""
    if expected == "not claimed":
        return "not claimed"
    outcomes = {r["outcome"] for r in runs}
    return "caught" if "caught" in outcomes else "clean" if outcomes == {"clean"} else "unknown"


def matrix_command(args: argparse.Namespace) -> int:
    from chaoskit.run.options import UsageError, names
    from chaoskit.pluginmanager import lookup_all

    clients, suites = names(args.clients, "--clients"), names(args.suites, "--suites")
    profiles = ["patched", "unpatched"] if args.profiles == "both" else [args.profiles]
    try:
        factories = lookup_all("clients", clients)
    except ValueError as e:
        raise UsageError(str(e)) from e
    missing = [s for s in suites if not (args.suites_dir / f"test_{s}.py").exists()]
    if missing:
        raise UsageError(f"no suite {', '.join(missing)} in {args.suites_dir}")
    broker = broker_changes(args)
    try:
        from chaoskit.pluginmanager import broker_kind

        broker_kind(broker.get("broker")).storage(broker.get("broker_storage"))
    except ValueError as e:
        raise UsageError(str(e)) from e
    seed, seeds = cell_seeds(args.seed, args.seeds)
    out = (args.out or args.reports / "matrix").resolve()
    print(f"chaoskit matrix: seed {seed} ({', '.join(map(str, seeds))}), clients {', '.join(clients)}, suites "
          f"{', '.join(suites)}, {args.profiles}; out {out}", flush=True)
    report: dict[str, Any] = {"seed": seed, "seeds": seeds, "cells": [], "clients": {
        c: {"library": library_of(f), "claims": sorted(claims_of(f))} for c, f in factories.items()}}
    for suite in suites:
        guarantee = guarantee_of(suite)
        for client in clients:
            for profile in profiles:
                expected = expectation(guarantee, profile, claims_of(factories[client]))
                # a cell not claimed is shown, not judged: one seed shows what was seen
                run_seeds = seeds[:1] if expected == "not claimed" else seeds
                runs = [run_cell(suite, out / "cells" / suite / client / profile / str(s), seed=s, profile=profile,
                                 client=client, suites_dir=args.suites_dir, broker=broker) for s in run_seeds]
                cell = {"suite": suite, "guarantee": guarantee, "client": client, "profile": profile,
                        "expected": expected, "word": classify(runs, expected), "seeds": runs}
                report["cells"].append(cell)
                print(f"  {suite} x {client} ({profile}): {cell['word']}", flush=True)
                write(report, out)
    findings = write_findings(report, out)
    write(report, out)
    print(markdown(report))
    for path in findings:
        print(f"finding: {path}")
    return 0


def write(report: dict[str, Any], out: Path) -> None:
    write_atomically(out / "matrix.json", json.dumps(report, indent=1) + "\n")
    write_atomically(out / "matrix.md", markdown(report))
    write_atomically(out / "matrix.html", page(report))


def _cell_text(cell: dict[str, Any]) -> str:
    word = cell["word"]
    if word == "not claimed":
        seen = {r["outcome"] for r in cell["seeds"]}
        return f"not claimed (seen: {', '.join(sorted(seen))})"
    caught = sum(r["outcome"] == "caught" for r in cell["seeds"])
    if word != "caught":
        return word
    # the verdicts' words: an unpatched cell exists to be caught; a patched one that was holds a finding
    said = "caught, as expected" if cell.get("expected") == "broken" else "anomaly"
    return f"{said} ({caught} of {len(cell['seeds'])} seeds)"


def markdown(report: dict[str, Any]) -> str:
    lines = ["| client | library | guarantee | profile | cell | evidence | first witness |",
             "|---|---|---|---|---|---|---|"]
    for cell in report["cells"]:
        first = next((r for s in cell["seeds"] for r in s["runs"]), None)
        evidence = _evidence(first) if first else ""
        witness = next((w for s in cell["seeds"] for r in s["runs"] for w in r["witnesses"]), "")
        lines.append(f"| {cell['client']} | {report['clients'][cell['client']]['library']} | {cell['guarantee']} | "
                     f"{cell['profile']} | {_cell_text(cell)} | {evidence} | {witness[:160]} |")
    return "\n".join(lines) + "\n"


def _evidence(run: dict[str, Any]) -> str:
    from chaoskit.checkers.catalog import CHECKS

    found = set(run["anomalies"])  # the checks that found something come first, with their count
    ranked = sorted(run["evidence"].items(), key=lambda item: item[0] not in found)
    parts = [f"{name} {counts.get('anomalies', '?')} in {counts[CHECKS[name].evidence]}" if name in found else
             f"{name} {counts[CHECKS[name].evidence]}" for name, counts in ranked
             if name in CHECKS and CHECKS[name].evidence in counts]
    return ", ".join(parts[:3])


def page(report: dict[str, Any]) -> str:
    """The report as a static HTML page: one row per client, a column per guarantee and profile."""
    e = html.escape
    columns = sorted({(c["guarantee"], c["profile"]) for c in report["cells"]}, key=str)
    head = "".join(f"<th>{e(str(g))}<br><small>{e(p)}</small></th>" for g, p in columns)
    rows = []
    for client, info in report["clients"].items():
        cells = []
        for g, p in columns:
            cell = next((c for c in report["cells"] if (c["client"], c["guarantee"], c["profile"]) == (client, g, p)),
                        None)
            if cell is None:
                cells.append("<td>-</td>")
                continue
            replay = next((r["replay"] for s in cell["seeds"] for r in s["runs"]), "")
            witness = next((w for s in cell["seeds"] for r in s["runs"] for w in r["witnesses"]), "")
            cells.append(f"<td class='{e(cell['word'].replace(' ', '-'))}'>{e(_cell_text(cell))}"
                         f"<br><small>{e(witness[:200])}</small><br><code>{e(replay)}</code></td>")
        rows.append(f"<tr><th>{e(client)}<br><small>{e(info['library'])}; claims "
                    f"{e(', '.join(info['claims']) or 'nothing')}</small></th>{''.join(cells)}</tr>")
    style = (".clean{background:#dff5e1}.caught{background:#fbdcdc}.unknown{background:#fff1c9}"
             ".not-claimed{background:#eee}td,th{border:1px solid #ccc;padding:4px;vertical-align:top}"
             "table{border-collapse:collapse}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>chaoskit conformance matrix</title>"
            f"<style>{style}</style></head><body><h1>Conformance: clients x guarantees</h1>"
            f"<p>seed {report['seed']}; seeds {', '.join(map(str, report['seeds']))}</p>"
            f"<table><tr><th>client</th>{head}</tr>{''.join(rows)}</table></body></html>\n")


def write_findings(report: dict[str, Any], out: Path) -> list[Path]:
    """findings/<client>-<guarantee>.md for each patched cell that broke a guarantee it must keep."""
    paths = []
    for cell in report["cells"]:
        if cell["profile"] != "patched" or cell["expected"] != "holds" or cell["word"] != "caught":
            continue
        caught = sorted((s for s in cell["seeds"] if s["outcome"] == "caught"), key=lambda s: s["seed"])
        first = caught[0]
        run = next(r for r in first["runs"] if r["valid"] is False)
        g = GUARANTEES.get(cell["guarantee"] or "")
        lines = [f"# {cell['client']} breaks {cell['guarantee']}", "",
                 f"- client: {cell['client']} ({report['clients'][cell['client']]['library']})",
                 f"- guarantee: {g.promise if g else cell['guarantee']} ({g.proposal if g else ''}), claimed by the client",
                 f"- suite: suites/test_{cell['suite']}.py, patched profile",
                 f"- caught in {len(caught)} of {len(cell['seeds'])} seeds; smallest seed {first['seed']}, "
                 f"run of {run['duration_s']} s",
                 f"- anomalies: {', '.join(run['anomalies'])}", f"- replay: `{run['replay']}`", "",
                 "## Witnesses", "", *[f"- {w}" for w in run["witnesses"]], "",
                 "## What the client sent (the brokers' request logs, around the anomaly)", "", "```",
                 *requests_of(Path(run["run_dir"])), "```", ""]
        path = out / "findings" / f"{cell['client']}-{cell['guarantee']}.md"
        write_atomically(path, "\n".join(lines))
        paths.append(path)
    return paths


def requests_of(run_dir: Path, limit: int = REQUESTS_AROUND * 5) -> list[str]:
    """The clients' requests the brokers logged (broker-N/requests.log), the last ones of each broker."""
    lines = []
    for log in sorted(run_dir.glob("broker-*/requests.log")):
        tail = log.read_text(errors="replace").splitlines()[-limit // 3:]
        lines += [f"{log.parent.name}: {line}" for line in tail]
    return lines or ["(no request log: the brokers were run without request.log.enable)"]
