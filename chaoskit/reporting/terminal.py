"""The verdict table on the terminal (rich): checks down, runs across, as the HTML summary has it."""
from __future__ import annotations

from typing import Any, Iterable

STYLE = {True: ("clean", "green"), False: ("ANOMALY", "bold red")}


def verdict_table(results: Iterable[Any], title: str = "verdict") -> Any:
    from rich.table import Table

    results = list(results)
    table = Table(title=title, show_lines=False)
    table.add_column("check")
    for r in results:
        table.add_column(f"{r.test.name}\n{r.test.profile} / {r.test.client}")
    table.add_row("[b]verdict[/b]", *(_cell(r.valid, bold=True) for r in results))
    for name in sorted({n for r in results for n in r.verdict.results}):
        cells = []
        for r in results:
            check = r.verdict.results.get(name)
            cells.append("-" if check is None else _cell(check.valid, _count(check.counts)))
        table.add_row(name, *cells)
    return table


def _cell(valid: Any, extra: str = "", bold: bool = False) -> str:
    word, style = STYLE.get(valid, ("unknown", "yellow"))
    text = f"[{style}]{'[b]' if bold else ''}{word}{'[/b]' if bold else ''}[/{style}]"
    return f"{text} {extra}".rstrip()


def _count(counts: dict[str, Any]) -> str:
    anomalies = counts.get("anomalies")
    return f"({anomalies})" if anomalies else ""


def print_results(results: Iterable[Any], title: str = "verdict") -> None:
    from rich.console import Console

    results = list(results)
    console = Console()
    console.print(verdict_table(results, title))
    for r in results:
        console.print(f"[b]{r.test.name} {r.test.profile}[/b]: {r.run_dir}\n  replay: {r.replay}",
                      highlight=False, soft_wrap=True)
        if r.error:
            console.print(f"  [yellow]run error: {r.error}[/yellow]", highlight=False)
