"""The static HTML summary (reports/runs/<id>/index.html): rendered by headless Chromium, it shows
the verdict table and every plot; a page with a broken plot is told apart."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from chaoskit.reporting.summary import plot_run, write_summary

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def render(index: Path) -> str:
    """The DOM after load, as headless Chromium builds it (scripts run, images decoded)."""
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: run `make setup` (it installs Debian's chromium)")
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                          "--virtual-time-budget=5000", "--dump-dom", index.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_the_summary_shows_the_verdicts_side_by_side_and_its_plots_load(make_result, tmp_path):
    patched, unpatched = make_result("patched"), make_result("unpatched", plant=("key-order",))
    assert patched.valid is True and unpatched.valid is False
    plots = {r.run_id: plot_run(r) for r in (patched, unpatched)}
    assert plots["run-unpatched"], f"a key-order anomaly gets its timeline plot: {unpatched.stats}"
    index = write_summary([patched, unpatched], tmp_path / "summary", "KIP-253 expansion", plots)

    dom = render(index)
    assert re.search(r'<body[^>]*data-plots-loaded="all"', dom), dom[:2000]
    table = dom[dom.index("<table id=\"verdicts\""):dom.index("</table>")]
    assert "kip253-expansion<br>patched" in table and "kip253-expansion<br>unpatched" in table
    row = re.search(r"<th>key-order</th>(.*?)</tr>", table, re.S).group(1)
    assert re.findall(r'class="(\w+)"', row) == ["clean", "anomaly"]
    images = re.findall(r"<img src=\"(plots/[^\"]+)\"", dom)
    assert len(images) == sum(len(p) for p in plots.values()) and all((index.parent / i).exists() for i in images)
    assert "--chaos-seed" not in dom and "chaoskit run" in dom  # each run's replay command is on the page


def test_a_broken_plot_is_reported_by_the_page(make_result, tmp_path):
    result = make_result("unpatched", plant=("key-order",))
    plots = {result.run_id: plot_run(result)}
    index = write_summary([result], tmp_path / "summary", "broken", plots)
    victim = next((index.parent / "plots").iterdir())
    victim.write_bytes(b"not a png")
    assert re.search(r'data-plots-loaded="broken:1"', render(index))
