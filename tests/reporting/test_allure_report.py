"""A chaos test in the Allure results: labels, link, steps, attachments, categories.json and
environment.properties, as allure-pytest writes them (its JSON read back and checked).

The run itself is replaced by a prepared RunResult (real checks over a synthetic history with a
planted anomaly): what is under test is the plugin's reporting, not a cluster.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SUITE = '''
import pytest
import chaoskit.suite.chaos

@pytest.fixture(autouse=True)
def prepared_run(monkeypatch, request):
    def fake_run(test, progress=False, keep=False):
        result = request.getfixturevalue("make_result")(test.profile, plant=("key-order",) if test.profile == "unpatched" else ())
        result.test = test
        return result
    monkeypatch.setattr(chaoskit.suite.chaos, "run", fake_run)

@pytest.mark.chaos(duration=5, epic="KIP-253", feature="expansion under leader isolation", severity="critical")
def test_expansion(chaos):
    result = chaos.run(client=chaos.pick(patched="ordered", unpatched="kafka-python"))
    chaos.expect(result, unpatched={"key-order"}, patched={"lost-write"} if CLAIM_LOST else ())
'''


def run_suite(pytester: pytest.Pytester, claim_lost: bool) -> Path:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(test_suite=SUITE.replace("CLAIM_LOST", str(claim_lost)))
    results = pytester.path / "allure-results"
    # a subprocess: an in-process run would unload numpy and matplotlib, which cannot load twice
    pytester.runpytest_subprocess("--alluredir", str(results), "--chaos-seed=9", "-p", "no:cacheprovider")
    return results


def test_results_carry_labels_steps_attachments_categories_and_environment(pytester):
    results = run_suite(pytester, claim_lost=False)
    cases = [json.loads(p.read_text()) for p in results.glob("*-result.json")]
    assert sorted(c["name"] for c in cases) == ["test_expansion[patched]", "test_expansion[unpatched]"]
    for case in cases:
        assert case["status"] == "passed", case.get("statusDetails")
        labels = {(label["name"], label["value"]) for label in case["labels"]}
        assert {("epic", "KIP-253"), ("feature", "expansion under leader isolation"), ("severity", "critical")} <= labels
        assert any("KIP-253" in link["name"] for link in case["links"])
        steps = [s["name"] for s in case["steps"]]
        assert steps[0].startswith("cluster up") and any(s.startswith("heal and drain") for s in steps)
        assert any(s.startswith("check key-order: ") for s in steps)
        for a in case["attachments"]:
            assert (results / a["source"]).exists(), a
        assert "history.jsonl" in {a["name"] for a in case["attachments"]}
    unpatched = next(c for c in cases if "unpatched" in c["name"])
    assert any(s["name"].startswith("check key-order: anomaly") for s in unpatched["steps"])
    assert any(a["type"] == "image/png" for a in unpatched["attachments"]), "the key-order timeline is attached"

    categories = json.loads((results / "categories.json").read_text())
    order = next(c for c in categories if "key-order" in c["messageRegex"])
    assert re.match(order["messageRegex"], "anomaly key-order in the patched profile")
    assert not re.match(order["messageRegex"], "not caught: key-order expected in the unpatched profile")
    env = dict(line.split("=", 1) for line in (results / "environment.properties").read_text().splitlines())
    assert env["seed"] == "9" and env["backend"] == "local" and "pyspark" in env


def test_a_failing_claim_says_the_anomaly_first_ends_with_the_replay_and_lands_in_its_category(pytester):
    results = run_suite(pytester, claim_lost=True)
    patched = next(json.loads(p.read_text()) for p in results.glob("*-result.json")
                   if "[patched]" in json.loads(p.read_text())["name"])
    assert patched["status"] == "failed"
    message = patched["statusDetails"]["message"]
    assert "ChaosFailure: not caught: lost-write expected in the patched profile" in message
    assert message.rstrip().splitlines()[-1].startswith("replay: pytest ")
    assert "--chaos-seed=9" in message and "--chaos-profile=patched" in message
    assert any(a["name"] == "broker-1.log" for a in patched["attachments"]), "node logs attached on failure"


def test_allure_generate_renders_the_results_when_the_cli_is_installed(pytester, tmp_path):
    allure = shutil.which("allure")
    if allure is None:
        pytest.skip("the Allure command line is not installed here (it is not in Debian or PyPI); "
                    "the JSON is checked by the other tests")
    results = run_suite(pytester, claim_lost=False)
    out = subprocess.run([allure, "generate", str(results), "-o", str(tmp_path / "html"), "--clean"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "html" / "index.html").exists()
