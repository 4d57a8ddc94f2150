"""Fixtures of the explore tests: recorded runs (tests/explore/data/*.tar.gz, each a run folder:
history, results, test.json and the controllers' and brokers' logs of a real run) unpacked, and a
grammar over one topic."""
from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from chaoskit.explore.grammar import Grammar
from chaoskit.explore.search import grammar_for
from chaoskit.run.chaostest import ChaosTest, Topic

DATA = Path(__file__).parent / "data"


@pytest.fixture
def recorded(tmp_path: Path):
    """recorded("rec-gates") -> the folder of that recorded run, unpacked into tmp_path."""
    def unpack(name: str) -> Path:
        with tarfile.open(DATA / f"{name}.tar.gz") as tar:
            tar.extractall(tmp_path, filter="data")
        return tmp_path / name
    return unpack


@pytest.fixture
def base() -> ChaosTest:
    return ChaosTest("xp", seed=3, duration_s=12, client="ordered", topics=[Topic("orders", 4)])


@pytest.fixture
def grammar(base: ChaosTest) -> Grammar:
    return grammar_for(base)
