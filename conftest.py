"""What is project-wide for this repository's own test runs (tests/ and suites/).

pytest reads this file first. The plugin itself comes from its `pytest11` entry point, as it does
for every user; here is only what holds for this checkout: its runs use this checkout's code, not
another installed copy (run `make setup` to install it). The other project-wide switches are ini
keys in pyproject.toml (`chaos_allure`: the suites' Allure results under reports/allure-results).
"""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    import chaoskit
    import chaoskit_plugins

    for package in (chaoskit, chaoskit_plugins):
        where = Path(package.__file__).resolve().parent.parent
        if where != ROOT:
            raise pytest.UsageError(f"{package.__name__} is imported from {where}, not this checkout ({ROOT}): "
                                    "run `make setup` here (it installs the checkout into .venv, editable)")
