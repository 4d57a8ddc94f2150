"""The built-in checks as plugins (chaoskit_plugins.checks): every catalog check is registered and
builds a Checker that judges a history on the engine its settings name."""
from __future__ import annotations

from chaoskit.checkers.catalog import CHECKS, KAFKA_CHECKS
from chaoskit.history import synthetic
from chaoskit.history.reader import History
from chaoskit.pluginmanager import lookup
from chaoskit_plugins.checks import CHECKS as REGISTERED


def test_every_catalog_check_is_registered():
    assert set(REGISTERED) == set(CHECKS)


def test_a_registered_kafka_check_finds_its_plant_and_passes_a_clean_history():
    planted = synthetic.generate(seed=4, events=800, plant=["duplicate"])
    clean = synthetic.generate(seed=4, events=800)
    checker = lookup("checks", "duplicate")(engine="local", spark_master=None, model=None, budget_s=5)
    found = checker.check(None, History(planted.ops))
    assert found.valid is False and found.counts["anomalies"] == planted.expected["duplicate"]
    assert checker.check(None, History(clean.ops)).valid is True
    assert all(lookup("checks", c.name)(engine="local").name == c.name for c in KAFKA_CHECKS)
