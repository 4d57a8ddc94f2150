"""docs/conformance.md cannot drift from the code: every `file::test` it cites exists, its subtotals
and summary are the table's own counts, and each row's status follows the page's legend (a row
that differs from its seed on purpose is partial, and says why)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "conformance.md"
STATUSES = ("yes", "partial", "no")
SECTIONS = {"KIP-253", "KIP-320", "KIP-694", "KAFKA-20029"}
DELIBERATE = "deliberate difference"
# a cited test: a path ending in .py, then ::test_name; or ::test_name alone, in the file cited last
CITED = re.compile(r"((?:[\w-]+/)*[\w-]+\.py)?::(test_\w+)")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def rows() -> list[tuple[str, list[str]]]:
    """(section, cells) for each numbered row of the proposals' tables."""
    out, section = [], None
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            section = next((s for s in SECTIONS if line[3:].startswith(s)), None)
        elif section and re.match(r"\| \d+ \|", line):
            out.append((section, _cells(line)))
    return out


def cited_tests(text: str) -> list[tuple[str, str]]:
    """(file, test) for each citation, a bare ::test taking the file cited before it."""
    out, last = [], None
    for m in CITED.finditer(text):
        last = m.group(1) or last
        if last is not None:
            out.append((last, m.group(2)))
    return out


def _test_file(cited: str) -> Path | None:
    # tests/ paths are written from inside tests/; suites/ from the root, or bare in the suites' table
    for base in (ROOT / "tests", ROOT, ROOT / "suites"):
        if (base / cited).is_file():
            return base / cited
    return None


def test_every_cited_test_exists():
    missing = []
    for cited, name in cited_tests(PAGE.read_text()):
        path = _test_file(cited)
        if path is None or not re.search(rf"^\s*(async )?def {name}\(", path.read_text(), re.M):
            missing.append(f"{cited}::{name}")
    assert not missing, f"docs/conformance.md cites tests that do not exist: {sorted(set(missing))}"


def test_the_rows_are_numbered_1_to_the_last_once_each():
    numbers = [int(cells[0]) for _, cells in rows()]
    assert numbers == list(range(1, len(numbers) + 1))


def test_the_subtotals_and_the_summary_are_the_tables_own_counts():
    text = PAGE.read_text()
    counts = {s: Counter(cells[2] for sec, cells in rows() if sec == s) for s in SECTIONS}
    assert all(set(c) <= set(STATUSES) for c in counts.values()), counts
    for s, c in counts.items():
        line = f"{s}: {sum(c.values())} rows, {c['yes']} yes, {c['partial']} partial, {c['no']} no."
        assert line in text, f"the {s} subtotal should read {line!r}"
        summary = f"| {s} | {sum(c.values())} | {c['yes']} | {c['partial']} | {c['no']} |"
        assert summary in text, f"the summary's {s} line should read {summary!r}"
    total = sum(counts.values(), Counter())
    assert f"| all | {sum(total.values())} | {total['yes']} | {total['partial']} | {total['no']} |" in text


@pytest.mark.parametrize("section,cells", rows(), ids=lambda x: x if isinstance(x, str) else f"row{x[0]}")
def test_each_rows_status_follows_the_legend(section, cells):
    number, status, reason = cells[0], cells[2], cells[-1]
    assert status in STATUSES, f"row {number}: status {status!r}"
    if DELIBERATE in reason.lower():
        assert status == "partial", f"row {number} differs from its seed on purpose, which the legend calls partial"
    if status != "yes":
        assert reason not in ("", "—"), f"row {number} is {status}: its last column must say what is missing"
