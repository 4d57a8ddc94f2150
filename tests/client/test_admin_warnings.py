"""KIP-694's topic-command warnings: when `chaoskit admin` prints each (admin_warnings.py) and that
the command prints them and goes on (an AdminClient stand-in: no cluster needed for what the
command decides; tests/client/test_admin_cli.py runs it against a real one)."""
from __future__ import annotations

from typing import Any

import pytest

from chaoskit.cli import main
from chaoskit.client import admin_cli
from chaoskit.client.admin import AdminError, PartitionInfo, TopicInfo
from chaoskit.client.admin_warnings import CHANGING, FEATURE, KEYED, feature_missing, topic_warnings
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.internal import DELETE_PARTITIONS
from chaoskit.protocol.registry import SUPPORTED


def topic(n: int, initial: int | None = 2, undeleted: int | None = None,
          marked: tuple[int, ...] = ()) -> TopicInfo:
    parts = {p: PartitionInfo(p, 1, 0, (1,), (1,), PartitionMode.READ_ONLY if p in marked else PartitionMode.READ_WRITE)
             for p in range(n)}
    if initial is None:  # created without ordered delivery: Metadata carries no counts
        return TopicInfo("t", ErrorCode.NONE, parts)
    return TopicInfo("t", ErrorCode.NONE, parts, initial, n - len(marked) if undeleted is None else undeleted)


def test_the_texts_are_the_kips():
    assert KEYED.startswith("WARNING: If partitions are increased for a topic that has a key")
    assert FEATURE == ("WARNING: This feature is only enabled with Metadata version above 10 and delete topic "
                       "partition enable turned on")
    assert CHANGING == "WARNING: The topic is currently under changes"


@pytest.mark.parametrize("info,expected", [
    (topic(4), []),                                               # linear hashing keeps key order: no warning
    (topic(4, initial=None), [KEYED]),                            # stock modulo placement
    (topic(6, marked=(4, 5)), [CHANGING]),                        # partitions still marked for deletion
    (topic(4, undeleted=6), [CHANGING]),                          # an expansion not in the metadata yet
])
def test_topic_warnings(info: TopicInfo, expected: list[str]):
    assert topic_warnings(info) == expected


def test_feature_missing_reads_api_versions():
    assert not feature_missing(dict(SUPPORTED))
    assert feature_missing({k: v for k, v in SUPPORTED.items() if k != DELETE_PARTITIONS})
    assert feature_missing({**SUPPORTED, 3: (0, 8)})  # no Metadata version carries `mode`


class FakeAdmin:
    """What the command asks of the AdminClient, answered from fixed values."""

    def __init__(self, info: TopicInfo, versions: dict[int, tuple[int, int]], refuse: int | None = None) -> None:
        self.info, self.versions, self.refuse = info, versions, refuse
        self.shrunk: list[tuple[Any, ...]] = []

    def __call__(self, _servers: str) -> FakeAdmin:
        return self

    def __enter__(self) -> FakeAdmin:
        return self

    def __exit__(self, *_: Any) -> None:
        pass

    def topic(self, _name: str) -> TopicInfo:
        return self.info

    def api_versions(self) -> dict[int, tuple[int, int]]:
        return self.versions

    def shrink(self, *args: Any) -> dict[int, PartitionMode]:
        if self.refuse is not None:
            raise AdminError(self.refuse, "refused", "shrinking")
        self.shrunk.append(args)
        return {2: PartitionMode.READ_ONLY}


def shrink(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fake: FakeAdmin,
           *extra: str) -> tuple[int, str, str]:
    monkeypatch.setattr(admin_cli, "AdminClient", fake)
    code = main(["admin", "shrink", "t", "--to", "2", "--bootstrap-server", "h:1", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_plain_shrink_warns_nothing(monkeypatch, capsys):
    fake = FakeAdmin(topic(4), dict(SUPPORTED))
    code, out, err = shrink(monkeypatch, capsys, fake, "--immediate")
    assert (code, err) == (0, "") and "marked for deletion (right away): 2 ReadOnly" in out
    assert fake.shrunk == [("t", 2, None, True)]


def test_warnings_are_printed_and_the_command_goes_on(monkeypatch, capsys):
    fake = FakeAdmin(topic(4, initial=None), {k: v for k, v in SUPPORTED.items() if k != DELETE_PARTITIONS})
    code, _out, err = shrink(monkeypatch, capsys, fake, "--delay-ms", "10")
    assert code == 0 and err.splitlines() == [KEYED, FEATURE] and fake.shrunk == [("t", 2, 10, False)]


def test_the_feature_warning_comes_with_a_disabled_brokers_refusal(monkeypatch, capsys):
    fake = FakeAdmin(topic(6, marked=(5,)), dict(SUPPORTED), refuse=ErrorCode.TOPIC_DELETION_DISABLED)
    code, _out, err = shrink(monkeypatch, capsys, fake)
    lines = err.splitlines()
    assert code == 3 and lines[:2] == [CHANGING, FEATURE] and "TOPIC_DELETION_DISABLED" in lines[2]
    assert err.count(FEATURE) == 1


def test_immediate_and_a_delay_are_exclusive(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["admin", "shrink", "t", "--to", "2", "--immediate", "--delay-ms", "5", "--bootstrap-server", "h:1"])
    assert exit_.value.code == 3 and "not allowed with argument" in capsys.readouterr().err
