"""The leader-epoch cache: Kafka's OffsetsForLeaderEpoch answers, assignment rules, the checkpoint file."""
from pathlib import Path

import pytest

from chaoskit.broker.log.epochs import CHECKPOINT_NAME, EpochEntry, LeaderEpochCache


@pytest.fixture
def cache(tmp_path: Path) -> LeaderEpochCache:
    c = LeaderEpochCache(tmp_path, lambda: 30)
    for epoch, start in [(0, 0), (2, 10), (5, 20)]:
        c.assign(epoch, start)
    return c


@pytest.mark.parametrize("requested,answer", [
    (5, (5, 30)),    # the latest epoch ends at the log end
    (2, (2, 20)),    # a known epoch ends where the next one starts
    (3, (2, 20)),    # an unknown epoch between: the floor epoch, ending at the next start
    (0, (0, 10)),
    (6, (-1, -1)),   # above every known epoch
    (-1, (-1, -1)),  # undefined
])
def test_end_offset_for(cache, requested, answer):
    assert cache.end_offset_for(requested) == answer


def test_epoch_below_every_known_one(tmp_path: Path):
    c = LeaderEpochCache(tmp_path, lambda: 30)
    c.assign(3, 10)
    assert c.end_offset_for(1) == (1, 10)
    assert LeaderEpochCache(tmp_path / "x", lambda: 0).end_offset_for(1) == (-1, -1)


def test_assign_same_epoch_later_is_a_no_op_and_contradictions_go(cache):
    cache.assign(5, 25)
    assert cache.latest() == EpochEntry(5, 20)
    cache.assign(4, 15)  # an older leader's epoch arriving late rewrites history from there
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(4, 15)]
    cache.assign(-1, 40)
    assert cache.latest_epoch == 4


def test_checkpoint_survives_reopen_in_kafkas_format(cache, tmp_path: Path):
    assert (tmp_path / CHECKPOINT_NAME).read_text() == "0\n3\n0 0\n2 10\n5 20\n"
    assert LeaderEpochCache(tmp_path, lambda: 30).entries == cache.entries


def test_unreadable_checkpoint_starts_empty_and_says_so(tmp_path: Path, caplog):
    (tmp_path / CHECKPOINT_NAME).write_text("0\n2\n1 0\n")
    assert LeaderEpochCache(tmp_path, lambda: 0).entries == []
    assert "leader-epoch-checkpoint is unreadable" in caplog.text


def test_truncation_from_both_ends(cache):
    cache.truncate_from_end(20)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [EpochEntry(2, 12)]
