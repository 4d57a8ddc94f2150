"""chaoskit's pytest plugin (the `pytest11` entry point).

It stays light: options, ini keys and markers here; Spark, Docker and the
cluster are imported only by the fixtures that need them.
"""
from __future__ import annotations

import pytest

# (flag, ini key, help, default); every flag has an ini equivalent so a project can pin it
OPTIONS = (
    ("--chaos-backend", "chaos_backend", "cluster backend: local (processes, default) or docker", "local"),
    ("--chaos-seed", "chaos_seed", "seed for every random choice (workload, schedule, targets); replays a run", None),
    ("--chaos-duration", "chaos_duration", "seconds of workload and faults per chaos test", None),
    ("--chaos-profile", "chaos_profile", "patched, unpatched or both: which broker/controller profile to run", "both"),
    ("--spark-master", "spark_master", "Spark master URL for the checkers (default local[2])", "local[2]"),
    ("--chaos-reports", "chaos_reports", "directory for run outputs (runs/<id>/, allure-results/)", "reports"),
)
CHOICES = {"--chaos-backend": ("local", "docker"), "--chaos-profile": ("patched", "unpatched", "both")}

MARKERS = (
    "chaos(faults=None, workload=None, duration=None): a chaos test; the run composes these parts",
    "nightly: a long chaos run, left out of CI (run with -m nightly)",
    "docker: needs a Docker engine (the docker backend)",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaoskit", "chaoskit: chaos testing for Kafka ordering guarantees")
    for flag, ini, help_text, default in OPTIONS:
        group.addoption(flag, dest=ini, default=None, choices=CHOICES.get(flag), help=f"{help_text} (ini: {ini})")
        parser.addini(ini, help=help_text, default=default)
    group.addoption(
        "--chaos-keep",
        dest="chaos_keep",
        action="store_true",
        default=None,
        help="leave the cluster up when a chaos test fails, and print how to reach it (ini: chaos_keep)",
    )
    parser.addini("chaos_keep", help="leave the cluster up on failure", type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)


def chaos_option(config: pytest.Config, name: str):
    """An option's value: the command line wins over the ini file, which wins over the default."""
    value = config.getoption(name)
    return config.getini(name) if value is None else value
