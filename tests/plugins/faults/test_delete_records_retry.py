"""The delete-records fault retries one partition's DeleteRecords while its leader is away (a closed
connection, a retriable error), asking for metadata again between tries, and stops at a definite
refusal (a unit test: a scripted admin client)."""
from __future__ import annotations

import pytest

from chaoskit.client.admin import AdminError
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.wire_client import WireClosed
from chaoskit_plugins.faults.delete_records import DeleteRecordsFault


class ScriptedAdmin:
    """Answers delete_records() from a script: an exception to raise, or the new log start."""

    def __init__(self, *answers):
        self.answers, self.metadata_asked = list(answers), 0

    def delete_records(self, topic, offsets):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return {p: answer for p in offsets}

    def metadata(self, topics):
        self.metadata_asked += 1


def test_a_leader_away_is_waited_for_and_the_records_deleted():
    admin = ScriptedAdmin(WireClosed("closed the connection after 0 of 4 bytes"),
                          AdminError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "moved", "orders-6"), 2)
    assert DeleteRecordsFault._delete(admin, "orders", 6, 2) == 2
    assert admin.metadata_asked == 2 and not admin.answers


def test_a_definite_refusal_is_raised_at_once():
    admin = ScriptedAdmin(AdminError(ErrorCode.OFFSET_OUT_OF_RANGE, "past the end", "orders-6"), 2)
    with pytest.raises(AdminError) as e:
        DeleteRecordsFault._delete(admin, "orders", 6, 99)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE and admin.answers == [2]
