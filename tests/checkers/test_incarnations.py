"""A partition removed and made again under its old number is judged as another partition
(history/incarnations.py): its offsets start again at 0 without a truncation, an old ReadOnly mode
does not apply to it, and a producer's offsets there do not go backwards."""
from __future__ import annotations

import pytest

from chaoskit.run.checks import run_checks
from chaoskit.history.incarnations import RECREATED, Incarnations, recreations

T = "t"
CHECKS = ["inconsistent-offsets", "nonmonotonic-send", "write-to-readonly", "truncation-undetected", "lost-write",
          "unseen", "duplicate"]


def send(i, proc, key, seq, p, off):
    value = [proc, key, seq]
    return [{"index": i, "process": proc, "type": "invoke", "f": "send", "topic": T, "key": key, "value": value},
            {"index": i + 1, "process": proc, "type": "ok", "f": "send", "topic": T, "key": key, "value": value,
             "partition": p, "offset": off}]


def poll(i, proc, *records):
    return [{"index": i, "process": proc, "type": "invoke", "f": "poll", "topic": T},
            {"index": i + 1, "process": proc, "type": "ok", "f": "poll", "topic": T,
             "value": [[p, o, key, [pr, key, seq], 0] for p, o, key, pr, seq in records]}]


def admin(i, f, **fields):
    return [{"index": i, "process": "admin", "type": "ok", "f": f, "topic": T, **fields}]


def history(made_again: bool = True) -> list[dict]:
    """Partition 1 written and read, marked ReadOnly, removed; then (made_again) the topic grows
    back to 2 partitions and the new partition 1 is written and read from offset 0."""
    old = send(0, 0, "a", 1, 1, 0) + send(2, 0, "a", 2, 1, 1) + poll(4, 10, (1, 0, "a", 0, 1), (1, 1, "a", 0, 2))
    marked = admin(6, "partition-mode", partition=1, value={"mode": "ReadOnly"}) + send(7, 0, "b", 3, 0, 0)
    grown = admin(9, "expand", value={"count": 2}) if made_again else []
    new = send(10, 0, "a", 4, 1, 0) + send(12, 0, "a", 5, 1, 1) + poll(14, 10, (1, 0, "a", 0, 4), (1, 1, "a", 0, 5),
                                                                         (0, 0, "b", 0, 3))
    return old + marked + grown + new


def test_the_admin_ops_name_the_partition_made_again():
    assert recreations(history()) == [(T, 1, 9, 1)]
    assert recreations(history(made_again=False)) == []
    seen = Incarnations()
    for op in history()[:10]:
        seen.observe(op)
    assert seen.partition(T, 1) == 1 + RECREATED and seen.partition(T, 0) == 0


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_partition_made_again_is_judged_as_another(engine, request):
    if engine == "spark":
        request.getfixturevalue("spark")
    verdict = run_checks(history(), CHECKS, engine=engine)
    assert {n: r.valid for n, r in verdict.results.items() if r.valid is False} == {}
    # the same records with no expansion between: one partition whose offsets 0 and 1 held two
    # records each, written backwards by one producer, and written while ReadOnly
    broken = run_checks(history(made_again=False), CHECKS, engine=engine)
    assert {n for n, r in broken.results.items() if r.valid is False} >= \
        {"inconsistent-offsets", "nonmonotonic-send", "write-to-readonly"}
