"""The admin fault retries a retriable refusal as Kafka's AdminClient does, stops at a definite one,
and takes a change an earlier attempt made as done (a unit test: a scripted admin client)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from chaoskit.client.admin import AdminError
from chaoskit.protocol.errors import ErrorCode
from chaoskit_plugins.faults.cluster_faults import AdminFault


class ScriptedAdmin:
    """Answers expand() from a script: an error code to raise, or None to grow the topic."""

    def __init__(self, *answers, partitions=6):
        self.answers, self.partitions, self.calls, self.rotations = list(answers), partitions, 0, 0

    def expand(self, topic, count):
        self.calls += 1
        code = self.answers.pop(0)
        if code is not None:
            raise AdminError(code, "scripted", f"expanding {topic!r}")
        self.partitions = count

    def topic(self, topic):
        return SimpleNamespace(partitions=dict.fromkeys(range(self.partitions)))

    def start_from_next_broker(self):
        self.rotations += 1


def change(admin):
    return AdminFault._change(None, admin, "expand", "orders", 8, None)


def test_a_retriable_refusal_is_retried_from_the_next_broker():
    admin = ScriptedAdmin(ErrorCode.REQUEST_TIMED_OUT, None)
    assert change(admin) == {} and (admin.calls, admin.rotations, admin.partitions) == (2, 1, 8)


def test_a_definite_refusal_ends_the_retries_at_once():
    admin = ScriptedAdmin(ErrorCode.INVALID_PARTITIONS)
    with pytest.raises(AdminError, match="INVALID_PARTITIONS"):
        change(admin)
    assert admin.calls == 1


def test_a_retry_that_finds_the_change_made_is_done():
    admin = ScriptedAdmin()

    def made_then_timed_out(topic, count):
        admin.calls += 1
        admin.partitions = count
        raise AdminError(ErrorCode.REQUEST_TIMED_OUT, "scripted", f"expanding {topic!r}")

    admin.expand = made_then_timed_out
    assert change(admin) == {} and admin.calls == 1  # no second request, which would be refused
