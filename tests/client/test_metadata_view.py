"""ClusterView (one module, its AdminClient's answers canned): each refresh asks the next broker,
and an answer with a lower leader epoch than one already seen (a zombie's, say) is not taken.
The same behaviour on a real cluster is what suites/test_kip320_zombie.py's patched run relies on."""
from __future__ import annotations

from chaoskit.client.admin import PartitionInfo, TopicInfo
from chaoskit.client.metadata import ClusterView
from chaoskit.protocol.errors import ErrorCode

BOOTSTRAP = "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"


def topic(leader: int, epoch: int, partitions: int = 2) -> TopicInfo:
    parts = {p: PartitionInfo(p, leader, epoch, (1, 2, 3), (1, 2, 3)) for p in range(partitions)}
    return TopicInfo("orders", ErrorCode.NONE, parts)


class Brokers:
    """Which broker each refresh asked (the first bootstrap address) and what that broker says."""

    def __init__(self, view: ClusterView, answers: dict[int, TopicInfo]) -> None:
        self.view, self.answers, self.asked = view, answers, []
        view.admin.metadata = self.metadata  # type: ignore[method-assign]

    def metadata(self, topics: list[str]) -> dict[str, TopicInfo]:
        port = self.view.admin.bootstrap[0][1]
        self.asked.append(port)
        return {"orders": self.answers[port]}


def test_refreshes_go_round_the_brokers():
    view = ClusterView(BOOTSTRAP, "test")
    brokers = Brokers(view, {1: topic(1, 0), 2: topic(1, 0), 3: topic(1, 0)})
    for _ in range(4):
        view.refresh(["orders"])
    assert brokers.asked == [1, 2, 3, 1]


def test_a_stale_answer_does_not_take_back_a_newer_leader():
    view = ClusterView(BOOTSTRAP, "test")
    # broker 1 is a zombie: it still names itself leader at epoch 0; the others know epoch 1
    Brokers(view, {1: topic(1, 0), 2: topic(2, 1), 3: topic(2, 1)})
    leaders = []
    for _ in range(6):
        leaders.append(view.refresh(["orders"])["orders"].partitions[0].leader)
    assert leaders == [1, 2, 2, 2, 2, 2]


def test_a_new_partition_or_a_newer_epoch_is_taken():
    view = ClusterView(BOOTSTRAP, "test")
    Brokers(view, {1: topic(1, 3), 2: topic(3, 4, partitions=3), 3: topic(3, 4, partitions=3)})
    view.refresh(["orders"])
    got = view.refresh(["orders"])["orders"]
    assert sorted(got.partitions) == [0, 1, 2] and got.partitions[0].leader_epoch == 4


def test_a_marked_partition_made_again_at_epoch_0_is_taken():
    """Partition 2 seen marked (ReadOnly, epoch 5), then removed and made again by an expansion
    before the next refresh: its epoch 0 is a new partition's, not a stale answer."""
    from chaoskit.protocol.extensions import PartitionMode

    view = ClusterView(BOOTSTRAP, "test")
    marked = topic(1, 5, partitions=3)
    marked.partitions[2] = PartitionInfo(2, 1, 5, (1, 2, 3), (1, 2, 3), mode=PartitionMode.READ_ONLY)
    again = topic(1, 6, partitions=3)
    again.partitions[2] = PartitionInfo(2, 1, 0, (1, 2, 3), (1, 2, 3))
    stale = topic(1, 6, partitions=3)  # a partition that never left, at an older epoch, is still refused
    stale.partitions[1] = PartitionInfo(1, 1, 4, (1, 2, 3), (1, 2, 3))
    Brokers(view, {1: marked, 2: again, 3: stale})
    view.refresh(["orders"])
    assert view.refresh(["orders"])["orders"].partitions[2].leader_epoch == 0
    assert view.refresh(["orders"])["orders"].partitions[1].leader_epoch == 6


def test_ordered_delivery_and_compaction_are_read_with_each_refresh_and_kept_when_unreadable():
    from chaoskit.protocol.wire_client import WireError

    view = ClusterView(BOOTSTRAP, "test")
    Brokers(view, {1: topic(1, 0), 2: topic(1, 0), 3: topic(1, 0)})
    answers: list = [WireError("no answer"),
                     {"orders": {"enable.ordered.delivery": "false", "cleanup.policy": "compact,delete"}},
                     WireError("no answer"), {"orders": {"enable.ordered.delivery": "true", "cleanup.policy": "delete"}}]

    def topic_configs(topics: list[str], keys: list[str]) -> dict:
        assert (topics, keys) == (["orders"], ["enable.ordered.delivery", "cleanup.policy"])
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    view.admin.topic_configs = topic_configs  # type: ignore[method-assign]
    seen = [(lambda i: (i.ordered_delivery, i.compacted))(view.refresh(["orders"])["orders"]) for _ in range(4)]
    # the defaults until read; the last values read while unreadable
    assert seen == [(True, False), (False, True), (False, True), (True, False)]
