"""`chaoskit matrix` (chaoskit.suite.matrix): cells read against what clients claim, the report
and its findings, and, in CI, one cell per stock client on the truncation suite (patched)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoskit.suite.cells import run_cell
from chaoskit.suite.matrix import classify, guarantee_of, markdown, page, write_findings

ROOT = Path(__file__).resolve().parents[2]
CI_SEED = 7


def seed(n: int, outcome: str, run_dir: str = "/nowhere") -> dict:
    runs = [{"valid": {"caught": False, "clean": True}.get(outcome, "unknown"), "anomalies": ["key-order"],
             "witnesses": ["key k1: ..."], "evidence": {"key-order": {"anomalies": 2, "key_pairs": 40}}, "run_dir": run_dir,
             "replay": f"pytest x --chaos-seed={n}", "duration_s": 16}]
    return {"seed": n, "outcome": outcome, "runs": runs}


def test_a_cell_reads_its_seeds_against_what_the_client_claims():
    assert guarantee_of("kip253_expansion") == guarantee_of("kip253_deletion") == "kip253-key-order"
    assert classify([seed(1, "clean"), seed(2, "caught")], "holds") == "caught"
    assert classify([seed(1, "clean"), seed(2, "clean")], "holds") == "clean"
    assert classify([seed(1, "clean"), seed(2, "unknown")], "holds") == "unknown"
    assert classify([seed(1, "caught")], "not claimed") == "not claimed"


def test_a_claimed_guarantee_broken_on_the_patched_profile_is_a_finding(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "broker-1").mkdir(parents=True)
    (run_dir / "broker-1" / "requests.log").write_text("13:00:00.000 chaoskit-3 Fetch v12 orders-0@5 -> ok\n")
    report = {"seed": 1, "seeds": [5, 3], "clients": {"c": {"library": "c 1.0", "claims": ["kip253-key-order"]}},
              "cells": [{"suite": "kip253_expansion", "guarantee": "kip253-key-order", "client": "c",
                         "profile": "patched", "expected": "holds", "word": "caught",
                         "seeds": [seed(5, "caught", str(run_dir)), seed(3, "caught", str(run_dir))]},
                        {"suite": "kip320_truncation", "guarantee": "kip320-truncation-detection", "client": "c",
                         "profile": "patched", "expected": "not claimed", "word": "not claimed",
                         "seeds": [seed(5, "caught")]}]}
    [finding] = write_findings(report, tmp_path)
    text = finding.read_text()
    assert finding.name == "c-kip253-key-order.md" and "smallest seed 3" in text and "c 1.0" in text
    assert "chaoskit-3 Fetch v12 orders-0@5" in text and "--chaos-seed=3" in text
    assert "not claimed (seen: caught)" in markdown(report) and "class='not-claimed'" in page(report)
    assert "| key-order 2 in 40 |" in markdown(report)  # the check that found it first, with its count
    assert "| anomaly (2 of 2 seeds) |" in markdown(report)  # a finding, in the verdicts' words
    report["cells"][0].update(profile="unpatched", expected="broken")
    assert "| caught, as expected (2 of 2 seeds) |" in markdown(report)


def test_claimed_cells_run_every_seed_and_cells_not_claimed_run_the_first(tmp_path, monkeypatch, capsys):
    import argparse

    from chaoskit.suite import matrix

    ran = []
    monkeypatch.setattr(matrix, "run_cell", lambda suite, where, *, seed, client, **kw: ran.append(
        (suite, client, seed)) or {"seed": seed, "outcome": "clean", "runs": [], "log": ""})
    args = argparse.Namespace(clients="kafka-python,aiokafka", suites="kip320_truncation", profiles="patched",
                              seeds=3, seed=11, out=tmp_path, suites_dir=ROOT / "suites")
    assert matrix.matrix_command(args) == 0
    seeds = json.loads((tmp_path / "matrix.json").read_text())["seeds"]
    assert ran == [("kip320_truncation", "kafka-python", s) for s in seeds] + [
        ("kip320_truncation", "aiokafka", seeds[0])]
    assert "not claimed (seen: clean)" in capsys.readouterr().out


# about 50 s a cell, so nightly, to keep CI under 30 minutes: in CI the stock clients are driven over
# TCP by tests/cluster/test_e2e_clients.py, tests/cluster/test_e2e_truncation.py and
# tests/plugins/clients/test_aio.py, and the matrix command by the test above
@pytest.mark.nightly
@pytest.mark.parametrize("client,word", [("kafka-python", "clean"), ("librdkafka", "clean"),
                                         ("aiokafka", "not claimed")])
def test_one_cell_per_stock_client(client, word, tmp_path):
    """Truncation detection (KIP-320) on the patched profile: kafka-python and librdkafka claim it and
    keep it; aiokafka does not claim it (it does not validate positions)."""
    from chaoskit.pluginmanager import lookup
    from chaoskit.run.guarantees import claims_of, expectation

    cell = run_cell("kip320_truncation", tmp_path, seed=CI_SEED, client=client, suites_dir=ROOT / "suites")
    expected = expectation("kip320-truncation-detection", "patched", claims_of(lookup("clients", client)))
    got = classify([cell], expected)
    assert got == word and cell["runs"], json.dumps(cell, indent=1)[:3000] + Path(cell["log"]).read_text()[-2000:]
    assert all(r["evidence"]["truncation-undetected"].get("replaced_reads", 0) > 0 for r in cell["runs"])
