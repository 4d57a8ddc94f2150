"""The verdict table on the terminal (rich): checks down, runs across, as the HTML summary has it."""
from __future__ import annotations

from typing import Any, Iterable

from chaoskit.checkers.catalog import CHECKS

STYLE = {"clean": "green", "anomaly": "bold red", "not exercised": "dim", "caught, as expected": "blue"}


PIPED_WIDTH = 200  # output that is not a terminal: wide, so that no name is cut mid-word


def console() -> Any:
    """A rich Console for chaoskit's own lines: the terminal's width, or PIPED_WIDTH when piped."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=PIPED_WIDTH)


def verdict_table(results: Iterable[Any], title: str = "verdict") -> Any:
    from rich.table import Table

    results = list(results)
    table = Table(title=title, show_lines=False)
    table.add_column("check", no_wrap=True)
    for r in results:
        table.add_column(f"{r.test.name}\n{r.test.profile} / {r.test.client}")
    table.add_row("[b]verdict[/b]", *(_cell(r.shown[0], bold=True) for r in results))
    for name in sorted({n for r in results for n in r.verdict.results}):
        cells = []
        for r in results:
            check = r.verdict.results.get(name)
            cells.append("-" if check is None else _cell(check.word, _count(name, check.counts)))
        table.add_row(name, *cells)
    return table


def _cell(word: str, extra: str = "", bold: bool = False) -> str:
    style = STYLE.get(word, "yellow")
    text = f"[{style}]{'[b]' if bold else ''}{word}{'[/b]' if bold else ''}[/{style}]"
    return f"{text} {extra}".rstrip()


def _count(name: str, counts: dict[str, Any]) -> str:
    """The anomalies found, then the evidence: how much the check had to judge."""
    parts = [f"({counts['anomalies']})"] if counts.get("anomalies") else []
    evidence = CHECKS[name].evidence if name in CHECKS else ""
    if evidence in counts:
        parts.append(f"[dim]{evidence} {counts[evidence]}[/dim]")
    return " ".join(parts)


def print_results(results: Iterable[Any], title: str = "verdict") -> None:
    from rich.markup import escape

    from chaoskit.checkers.situate import witness_text
    from chaoskit.history.availability import describe

    results = list(results)
    out = console()
    out.print(verdict_table(results, title))
    for r in results:
        out.print(f"[b]{r.test.name} {r.test.profile}[/b]: {r.run_dir}/index.html"
                  + "".join(f"\n  replay: {escape(c)}" for c in r.replays), highlight=False, soft_wrap=True)
        if r.error:
            out.print(f"  [yellow]run error: {r.error}[/yellow]", highlight=False)
        out.print(f"  verdict: {_cell(r.shown[0])}: {escape(r.verdict.tally)}", highlight=False,
                  soft_wrap=True)
        if r.verdict.valid == "unknown":
            out.print(f"  [yellow]unknown: {escape(str(r.verdict.reason))}[/yellow]", highlight=False,
                      soft_wrap=True)
        for name, check in sorted(r.verdict.results.items()):
            if check.valid is False and check.witnesses:  # the first witness, in time and among the faults
                out.print(f"  [red]{name}[/red]: {escape(witness_text(check.witnesses[0]))}", highlight=False,
                          soft_wrap=True)
        if r.stats.get("availability"):
            out.print(f"  availability: {describe(r.stats['availability'])}", highlight=False)
