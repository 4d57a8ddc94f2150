"""The static HTML pages, rendered by headless Chromium: a summary shows the verdict table and every
plot, and links each run's page; a run's page (reports/runs/<id>/index.html) links every file the
run left and lists every witness; a page with a broken plot is told apart."""
from __future__ import annotations

import json
import re

from chaoskit.reporting.summary import plot_run, write_summary


def test_the_summary_shows_the_verdicts_side_by_side_and_its_plots_load(make_result, tmp_path, render):
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


def test_a_broken_plot_is_reported_by_the_page(make_result, tmp_path, render):
    result = make_result("unpatched", plant=("key-order",))
    plots = {result.run_id: plot_run(result)}
    index = write_summary([result], tmp_path / "summary", "broken", plots)
    victim = next((index.parent / "plots").iterdir())
    victim.write_bytes(b"not a png")
    assert re.search(r'data-plots-loaded="broken:1"', render(index))


def test_each_run_has_its_own_page_linking_every_file_it_left_and_the_summary_links_to_it(make_result, tmp_path,
                                                                                          render):
    result = make_result("unpatched", plant=("key-order", "key-order"))
    (result.run_dir / "results.json").write_text("{}")
    (result.run_dir / "nodes").mkdir()
    (result.run_dir / "nodes" / "spark.log").write_text("spark said\n")
    plots = {result.run_id: plot_run(result)}  # draws the plots, then writes the run's page
    page = result.run_dir / "index.html"
    dom = render(page)
    assert re.search(r'<body[^>]*data-plots-loaded="all"', dom), dom[:2000]
    links = re.findall(r"<a href=\"([^\"]+)\"", dom)
    for name in ("history.jsonl", "results.json", "broker-1.log", "nodes/spark.log"):
        assert name in links, (name, links)
    assert all((page.parent / link).exists() for link in links)
    assert all(f"plots/{p.name}" in links for p in plots[result.run_id])  # each plot at full size
    witnesses = re.findall(r"<ol class=\"witnesses\">(.*?)</ol>", dom, re.S)
    stored = result.verdict.results["key-order"].witnesses
    assert witnesses and witnesses[0].count("<li>") == len(stored) == 2  # every stored witness, not one

    summary = write_summary([result], tmp_path / "summary", "one run", plots)
    run_page = re.search(r"<a class=\"run-page\" href=\"([^\"]+)\"", render(summary)).group(1)
    assert (summary.parent / run_page).resolve() == page.resolve()


def test_the_timeline_draws_every_process_the_faults_by_name_and_the_witnesses_ops(make_result, render):
    result = make_result("unpatched", plant=("key-order",))
    plot_run(result)
    timeline = result.run_dir / "timeline.html"
    dom = render(timeline)
    lanes = re.findall(r"<span class=\"name\">([^<]+)</span>", dom)
    ops = [json.loads(line) for line in result.history.read_text().splitlines()]
    assert set(lanes) == {str(op["process"]) for op in ops if op["process"] != "nemesis"}
    faults = re.findall(r"<div class=\"(?:fault|admin)\"[^>]*title=\"([^\"]+)\"", dom)
    assert faults and all(re.search(r"\w+ \S+", f) for f in faults)  # kind and target, not "fault window"
    w = result.verdict.results["key-order"].witnesses[0]
    for field in ("first_delivered", "second_delivered"):
        assert re.search(rf"<div class=\"op witness\" id=\"op-{w[field]}\"", dom), field
    page = render(result.run_dir / "index.html")  # the run's page links each witness op into the timeline
    links = re.findall(r"<a class=\"op-link\" href=\"timeline.html#op-(\d+)\"", page)
    assert {str(w["first_delivered"]), str(w["second_delivered"])} <= set(links)
    assert all(re.search(rf"id=\"op-{i}\"", dom) for i in links)  # every link lands on an op


def test_a_catch_the_run_exists_for_stands_apart_from_a_failure(make_result, tmp_path, render):
    expected, unexpected = make_result("unpatched", plant=("key-order",)), make_result("patched", plant=("key-order",))
    expected.expected = {"key-order"}  # the unpatched side of a comparison: caught is its pass
    assert expected.shown == ("caught, as expected", "expected") and unexpected.shown == ("anomaly", "anomaly")
    dom = render(write_summary([unexpected, expected], tmp_path / "summary", "both"))
    overall = re.search(r"<th>verdict</th>(.*?)</tr>", dom, re.S).group(1)
    assert re.findall(r'class="(\w+)"><b>([^<]+)</b>', overall) == [("anomaly", "anomaly"),
                                                                     ("expected", "caught, as expected")]
