"""Jepsen Kafka histories (jepsen.tests.kafka's history.edn) read as our ops: each anomaly the
workload describes, planted in a small hand-written history, is found by the local engine and a clean
one checks clean; our own histories survive export and reading back with the same results; broken
lines are reported by number."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from chaoskit.checkers.catalog import KAFKA_CHECKS
from chaoskit.run.checks import run_checks
from chaoskit.checkers.situate import unsituated
from chaoskit.history import synthetic
from chaoskit.history.jepsen_kafka import jepsen_topic_partition
from chaoskit.history.jepsen_kafka_write import jepsen_kafka_lines, write_jepsen_kafka
from chaoskit.history.reader import History, detect_format

JEPSEN_CHECKS = ["lost-write", "unseen", "duplicate", "inconsistent-offsets", "poll-skip", "nonmonotonic-poll",
                 "nonmonotonic-send"]


def op(kind: str, process: int, f: str, value: str, extra: str = "") -> str:
    return f"{{:type :{kind}, :process {process}, :f :{f}, :value {value}{extra}}}"


def send(process: int, key: int, value: int, offset: int | None, kind: str = "ok") -> list[str]:
    """A :send op of one micro-op: invoked [:send k v], completed [:send k [offset v]]."""
    done = f"[{'nil' if offset is None else offset} {value}]" if kind == "ok" else str(value)
    return [op("invoke", process, "send", f"[[:send {key} {value}]]"),
            op(kind, process, "send", f"[[:send {key} {done}]]")]


def reads(polled: dict[int, list[tuple[int, int]]]) -> str:
    return "{" + ", ".join(f"{k} [{' '.join(f'[{o} {v}]' for o, v in pairs)}]" for k, pairs in polled.items()) + "}"


def poll(process: int, polled: dict[int, list[tuple[int, int]]]) -> list[str]:
    return [op("invoke", process, "poll", "[[:poll]]"), op("ok", process, "poll", f"[[:poll {reads(polled)}]]")]


def failed_poll(process: int, kind: str, polled: dict[int, list[tuple[int, int]]]) -> list[str]:
    """A poll that failed (an aborted transaction's) or is indeterminate, but returned records."""
    return [op("invoke", process, "poll", "[[:poll]]"), op(kind, process, "poll", f"[[:poll {reads(polled)}]]")]


def indexed(*maps: str) -> list[str]:
    """Op maps given their :index in the order written ("i:{...}")."""
    return ["{:index " + m.split(":", 1)[0] + ", " + m.split(":", 1)[1][1:] for m in maps]


def ring(n: int, kind: str = "read", broken: bool = False) -> list[str]:
    """n concurrent transactions, all invoked before any completes (no real-time order among them),
    each depending on the next round to the first: `read`, T_i sends key 2i and reads what T_(i+1)
    sent (wr edges, a G1c of length n); `write`, T_i's value on key 2i follows T_(i-1)'s and precedes
    its own on key 2(i+1) (ww edges, a G0 of length n). `broken`: the last dependency is missing."""
    invokes, completions = [], []
    for i in range(n):
        j = (i + 1) % n
        if kind == "read":
            read = "" if broken and i == n - 1 else f"[{0} {100 + j}]"
            invokes.append(op("invoke", i, "txn", f"[[:send {2 * i} {100 + i}] [:poll]]"))
            completions.append(op("ok", i, "txn", f"[[:send {2 * i} [0 {100 + i}]] [:poll {{{2 * j} [{read}]}}]]"))
        else:  # T_i writes key 2i at offset 1 (after T_(i-1)'s at 0) and key 2j at offset 0
            at = 2 if broken and i == 0 else 0
            invokes.append(op("invoke", i, "txn", f"[[:send {2 * i} {100 + i}] [:send {2 * j} {200 + i}]]"))
            completions.append(op("ok", i, "txn", f"[[:send {2 * i} [1 {100 + i}]] [:send {2 * j} [{at} {200 + i}]]]"))
    return invokes + completions


def assign(process: int, keys: list[int], f: str = "assign") -> list[str]:
    value = "[" + " ".join(map(str, keys)) + "]"
    return [op("invoke", process, f, value), op("ok", process, f, value)]


def load(tmp_path: Path, lines: list[str], name: str = "history.edn") -> History:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return History.from_path(path)


def verdict(history: History, checks: list[str] = JEPSEN_CHECKS):
    return run_checks(history, checks, engine="local")


# keys 0 and 1 are topic t0's partitions 0 and 1, key 2 is t1/0; process 6's txn sends and polls at once
CLEAN = (send(0, 0, 1, 0) + send(0, 0, 2, 1) + send(0, 1, 3, 0) + send(0, 0, 4, 2)
         + poll(5, {0: [(0, 1), (1, 2)], 1: [(0, 3)]}) + poll(5, {0: [(2, 4)]})
         + [op("invoke", 6, "txn", "[[:send 2 5] [:poll]]"),
            op("ok", 6, "txn", f"[[:send 2 [0 5]] [:poll {reads({0: [(0, 1), (1, 2), (2, 4)]})}]]")]
         + poll(5, {2: [(0, 5)]}))

PLANTED = {
    # an acknowledged write at offset 0 was never read, though offset 1 of its key was
    "lost-write": send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(1, 2)]}),
    # the last acknowledged write was never read, nor anything after it
    "unseen": send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(0, 1)]}),
    # one value at two offsets of a key
    "duplicate": send(0, 0, 1, 0) + poll(5, {0: [(0, 1), (1, 1)]}),
    # two writes acknowledged at one offset
    "inconsistent-offsets": send(0, 0, 1, 0) + send(1, 0, 2, 0) + poll(5, {0: [(0, 1)]}),
    # a consumer's next poll of a key jumps over offset 1, which exists
    "poll-skip": send(0, 0, 1, 0) + send(0, 0, 2, 1) + send(0, 0, 3, 2)
    + poll(5, {0: [(0, 1)]}) + poll(5, {0: [(2, 3)]}),
    # a consumer's next poll of a key starts where the last one ended, not after it
    "nonmonotonic-poll": send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(0, 1), (1, 2)]}) + poll(5, {0: [(1, 2)]}),
    # a producer's second send to a key got a lower offset than its first
    "nonmonotonic-send": send(0, 0, 1, 1) + send(0, 0, 2, 0) + poll(5, {0: [(0, 2), (1, 1)]}),
}


def test_a_clean_history_checks_clean_with_something_to_judge(tmp_path: Path):
    history = load(tmp_path, CLEAN)
    assert history.problems == []
    v = verdict(history)
    assert {n: r.valid for n, r in v.results.items()} == {n: True for n in JEPSEN_CHECKS}
    assert v.valid is True


@pytest.mark.parametrize("check", JEPSEN_CHECKS)
def test_each_planted_anomaly_is_found(tmp_path: Path, check: str):
    result = verdict(load(tmp_path, PLANTED[check]), [check]).results[check]
    assert result.valid is False and result.counts["anomalies"] == 1


def test_micro_ops_become_sends_and_polls_of_the_keys_topic_partitions(tmp_path: Path):
    ops = load(tmp_path, CLEAN).ops
    txn = [o for o in ops if o["process"] == 6]
    assert [(o["type"], o["f"]) for o in txn] == [("invoke", "send"), ("invoke", "poll"), ("ok", "send"),
                                                  ("ok", "poll")]
    assert (txn[2]["topic"], txn[2]["partition"], txn[2]["offset"], txn[2]["value"]) == ("t1", 0, 0, 5)
    assert (txn[3]["topic"], txn[3]["value"]) == ("t0", [[0, 0, None, 1, None], [0, 1, None, 2, None],
                                                         [0, 2, None, 4, None]])
    # a poll of two topics is one poll op per topic
    two = load(tmp_path, poll(5, {0: [(0, 1)], 3: [(0, 7)], 1: [(4, 3)]}), "two.edn").ops
    assert [(o["topic"], [r[:2] for r in o["value"]]) for o in two[1:]] == [("t0", [[0, 0], [1, 4]]), ("t1", [[1, 0]])]
    assert [jepsen_topic_partition(k) for k in (0, 1, 2, 5)] == [("t0", 0), ("t0", 1), ("t1", 0), ("t2", 1)]


def test_an_info_send_keeps_no_offset_and_a_crash_is_kept(tmp_path: Path):
    ops = load(tmp_path, send(0, 0, 1, None, kind="info") + [op("info", 1, "crash", "nil")]).ops
    assert [(o["type"], o["f"], o.get("offset")) for o in ops] == [("invoke", "send", None), ("info", "send", None),
                                                                 ("info", "crash", None)]


@pytest.mark.parametrize("f", ["assign", "subscribe"])
def test_assign_and_subscribe_keep_the_keys_they_name(tmp_path: Path, f: str):
    """Jepsen's rule on a Jepsen history: an assign or subscribe keeps the last read of the keys it
    names and forgets the others; under subscribe the skip is allowed (docs/history.md)."""
    skip = PLANTED["poll-skip"]
    history = load(tmp_path, skip[:-2] + assign(5, [0], f) + skip[-2:])
    assert [o["value"] for o in history.ops if o["f"] == "on_partitions_assigned"] == [[["t0", 0]]]
    counts = verdict(history, ["poll-skip"]).results["poll-skip"].counts
    assert (counts["anomalies"], counts["allowed"]) == ((1, 0) if f == "assign" else (0, 1))
    forgot = load(tmp_path, skip[:-2] + assign(5, [1], f) + skip[-2:], "forgot.edn")
    assert verdict(forgot, ["poll-skip"]).results["poll-skip"].counts["anomalies"] == 0


def test_a_rebalance_during_a_poll_does_not_excuse_a_skip_across_polls(tmp_path: Path):
    skip = PLANTED["poll-skip"]
    rebalanced = op("ok", 5, "poll", "[[:poll {0 [[2 3]]}]]", ", :rebalance-log [{:keys [0 1]}]")
    history = load(tmp_path, skip[:-1] + [rebalanced])
    assert [o["f"] for o in history.ops[-2:]] == ["on_partitions_assigned", "poll"]
    assert verdict(history, ["poll-skip"]).results["poll-skip"].counts["anomalies"] == 1


def test_kafka_edn_is_detected_and_other_edn_is_not(tmp_path: Path):
    (tmp_path / "k.edn").write_text("\n".join(CLEAN) + "\n")
    (tmp_path / "r.edn").write_text("{:type :invoke, :process 0, :f :write, :value 3}\n")
    assert detect_format(tmp_path / "k.edn") == "jepsen-kafka"
    assert detect_format(tmp_path / "r.edn") == "edn"


def test_what_cannot_be_mapped_is_a_problem_with_its_line_and_the_rest_loads(tmp_path: Path):
    lines = send(0, 0, 1, 0) + [
        "{:type :ok, :process 0, :f :send, :value [[:send 0",  # truncated
        op("ok", 5, "poll", "[[:poll {0 [[0 1] [x 2]]}] [:frob 1]]"),  # one bad read, one unknown micro-op
        op("ok", 5, "send", "[[:send 0]]"),  # no value
        op("ok", 5, "txn", "3"),
    ] + poll(6, {0: [(0, 1)]})
    history = load(tmp_path, lines, "bad.edn")
    assert history.problems == [
        "line 3: the text ends inside a form (column 51): truncated?",
        "line 4: micro-op 1: a micro-op is [:send k v] or [:poll ...], got [:frob 1]",
        'line 4: micro-op 0: a read is [offset value] with an integer offset, got ["x" 2]',
        "line 5: micro-op 0: a send micro-op is [:send k v], got [:send 0]",
        "line 6: a :txn op's value is a vector of micro-ops, got 3",
    ]
    polls = [o for o in history.ops if o["f"] == "poll" and o["type"] == "ok"]
    assert [o["value"] for o in polls] == [[[0, 0, None, 1, None]], [[0, 0, None, 1, None]]]
    assert verdict(history).valid == "unknown"  # a clean verdict over part of a history is not clean


def _results(history) -> dict:
    # the witnesses' place among the run's faults aside: the export keeps no fault windows
    return {n: unsituated(r.to_json()) for n, r in verdict(history, [c.name for c in KAFKA_CHECKS]).results.items()}


@pytest.mark.parametrize("plant", [(), synthetic.KINDS], ids=["clean", "every-plant"])
def test_our_history_exported_and_read_back_gives_the_same_results(tmp_path: Path, plant):
    ours = synthetic.generate(seed=11, events=2500, plant=plant).ops
    back = History.from_path(write_jepsen_kafka(ours, tmp_path / "out.edn"))
    assert back.problems == []
    assert _results(back) == _results(History(ours))


def test_export_writes_values_as_json_texts_under_a_key_map():
    invoke = {"index": 0, "process": 0, "type": "invoke", "f": "send", "topic": "orders", "key": "k",
              "value": [0, "k", 1]}
    ops = [invoke, {**invoke, "index": 1, "type": "ok", "partition": 3, "offset": 7}]
    header, invoked, done = jepsen_kafka_lines(ops)
    assert header == ('{:process :chaoskit, :type :info, :f :chaoskit-export, '
                      ':value {:keys {0 ["orders" 3]}, :values :json-text}}')
    assert invoked == '{:index 0, :type :invoke, :process 0, :f :send, :value [[:send 0 "[0,\\"k\\",1]"]], ' \
                     ':topic "orders", :key "k"}'
    assert ':value [[:send 0 [7 "[0,\\"k\\",1]"]]]' in done


def test_any_edn_key_is_a_topic_of_its_own_named_as_the_history_wrote_it(tmp_path: Path):
    """Jepsen's checker takes keys as opaque values (its tests use keywords): each key that is not a
    non-negative integer is one partition of a topic named by its EDN text, whatever order keys come in."""
    lines = [op("ok", 5, "poll", '[[:poll {[1 2] [[0 1]], {:k 1} [[0 2]], 0 [[0 3]], :x [[0 4]], -1 [[0 6]]}]]'),
             op("ok", 5, "poll", '[[:poll {"x" [[0 5]]}]]')]
    history = load(tmp_path, lines)
    assert history.problems == []
    got = {(o["topic"], r[0]): r[3] for o in history.ops for r in o["value"]}
    assert got == {("[1 2]", 0): 1, ("{:k 1}", 0): 2, ("t0", 0): 3, (":x", 0): 4, ('"x"', 0): 5, ("-1", 0): 6}


def test_keyword_keys_are_judged_per_key(tmp_path: Path):
    """A lost write on :x is found and named by its key; :y, read in full, is clean."""
    lines = [op("invoke", 0, "send", "[[:send :x 1] [:send :y 3]]"),
             op("ok", 0, "send", "[[:send :x [0 1]] [:send :y [0 3]]]"),
             op("invoke", 0, "send", "[[:send :x 2]]"), op("ok", 0, "send", "[[:send :x [1 2]]]"),
             op("invoke", 5, "poll", "[[:poll]]"), op("ok", 5, "poll", "[[:poll {:x [[1 2]], :y [[0 3]]}]]")]
    result = verdict(load(tmp_path, lines), ["lost-write"]).results["lost-write"]
    assert result.valid is False
    assert [(w["topic"], w["partition"], w["value"]) for w in result.witnesses] == [(":x", 0, "1")]


# --- Jepsen's rules (docs/history.md "Jepsen's rules on Jepsen histories"): each anomaly planted where it
# must be found and near-misses where it must not, on both engines and through both round trips

def txn(process: int, kind: str, mops: str) -> list[str]:
    """One Jepsen op of several micro-ops completed as `mops`, invoked as them without offsets or reads."""
    invoked = re.sub(r"\[:poll \{[^}]*\}\]", "[:poll]", re.sub(r"\[(nil|\d+) (\d+)\]\]", r"\2]", mops))
    return [op("invoke", process, "txn", invoked), op(kind, process, "txn", mops)]


SEND_0_1_2 = send(0, 0, 1, 0) + send(0, 0, 2, 1) + send(0, 0, 3, 2)
# (name, lines, check, anomalies expected, fields every witness has (the first one's))
CASES = [
    ("lost", send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(1, 2)]}), "lost-write", 1,
     {"value": "1", "offset": 0, "max_read": 1, "process": 0}),
    ("lost-is-also-unseen", send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(1, 2)]}), "unseen", 1, {"value": "1"}),
    # an info send with offsets counts once some send of its op was read (key 1's 9): then 1 is lost
    ("info-committed-lost", txn(0, "info", "[[:send 0 [0 1]] [:send 1 [0 9]]]") + send(0, 0, 2, 1)
     + poll(5, {0: [(1, 2)], 1: [(0, 9)]}), "lost-write", 1, {"value": "1", "offset": 0}),
    ("info-unread-not-lost", txn(0, "info", "[[:send 0 [0 1]] [:send 1 [0 9]]]") + send(0, 0, 2, 1)
     + poll(5, {0: [(1, 2)]}), "lost-write", 0, {}),
    ("unseen", send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(0, 1)]}), "unseen", 1, {"value": "2", "offset": 1}),
    ("unseen-no-offset", send(0, 0, 1, None) + send(0, 0, 2, 0) + poll(5, {0: [(0, 2)]}), "unseen", 1,
     {"value": "1", "offset": None}),
    ("info-unread-not-unseen", send(0, 0, 1, None, kind="info") + send(0, 0, 2, 0) + poll(5, {0: [(0, 2)]}),
     "unseen", 0, {}),
    ("duplicate", send(0, 0, 1, 0) + poll(5, {0: [(0, 1), (1, 1)]}), "duplicate", 1,
     {"value": "1", "count": 2, "positions": [["t0", 0, 0], ["t0", 0, 1]]}),
    ("duplicate-across-keys-is-not", send(0, 0, 1, 0) + poll(5, {0: [(0, 1)], 1: [(0, 1)]}), "duplicate", 0, {}),
    ("inconsistent", send(0, 0, 1, 0) + send(1, 0, 2, 0) + poll(5, {0: [(0, 1)]}), "inconsistent-offsets", 1,
     {"offset": 0, "values": ["1", "2"]}),
    # two acknowledged sends of different values at one offset: divergent without any poll
    ("inconsistent-from-sends-alone", send(0, 0, 1, 0) + send(1, 0, 2, 0), "inconsistent-offsets", 1,
     {"offset": 0, "values": ["1", "2"]}),
    ("sends-at-distinct-offsets-are-not", send(0, 0, 1, 0) + send(1, 0, 2, 1), "inconsistent-offsets", 0, {}),
    # a failed or indeterminate poll's records show what the log held (duplicate, inconsistent-offsets)...
    ("failed-poll-duplicate", send(0, 0, 1, 0) + failed_poll(5, "fail", {0: [(0, 1), (1, 1)]}), "duplicate", 1,
     {"value": "1", "count": 2}),
    ("info-poll-inconsistent", send(0, 0, 1, 0) + failed_poll(5, "info", {0: [(0, 2)]}), "inconsistent-offsets", 1,
     {"offset": 0, "values": ["1", "2"]}),
    # ...but were not read: 1 is lost though a failed poll returned it
    ("failed-poll-is-no-read", send(0, 0, 1, 0) + send(0, 0, 2, 1) + failed_poll(5, "fail", {0: [(0, 1)]})
     + poll(5, {0: [(1, 2)]}), "lost-write", 1, {"value": "1"}),
    # an aborted transaction's records (offset 1) are skipped legitimately: no skip, nothing lost
    ("aborted-txn-skipped-is-no-skip", send(0, 0, 1, 0) + txn(1, "fail", "[[:send 0 [1 2]]]") + send(0, 0, 3, 2)
     + poll(5, {0: [(0, 1)]}) + poll(5, {0: [(2, 3)]}), "poll-skip", 0, {}),
    ("aborted-txn-skipped-is-not-lost", send(0, 0, 1, 0) + txn(1, "fail", "[[:send 0 [1 2]]]") + send(0, 0, 3, 2)
     + poll(5, {0: [(0, 1), (2, 3)]}), "lost-write", 0, {}),
    # a producer's order is the history's (:index, whatever order the lines come in), its values the completions'
    ("nonmonotonic-send-lines-out-of-order", indexed(
        "3:{:type :ok, :process 0, :f :send, :value [[:send 0 [1 2]]]}",
        "0:{:type :invoke, :process 0, :f :send, :value [[:send 0 1]]}",
        "1:{:type :ok, :process 0, :f :send, :value [[:send 0 [5 1]]]}",
        "2:{:type :invoke, :process 0, :f :send, :value [[:send 0 2]]}",
        "5:{:type :ok, :process 5, :f :poll, :value [[:poll {0 [[1 2] [5 1]]}]]}",
        "4:{:type :invoke, :process 5, :f :poll, :value [[:poll]]}"),
     "nonmonotonic-send", 1, {"from_offset": 5, "to_offset": 1}),
    ("nonmonotonic-send-completion-values", send(0, 0, 9, None, kind="invoke")[:1]
     + [op("ok", 0, "send", "[[:send 0 [5 1]]]"), op("invoke", 0, "send", "[[:send 0 8]]"),
        op("ok", 0, "send", "[[:send 0 [1 2]]]")] + poll(5, {0: [(1, 2), (5, 1)]}),
     "nonmonotonic-send", 1, {"from_offset": 5, "to_offset": 1}),
    # cycles: transactions each reading what the next wrote (G1c), concurrent; broken, none
    ("G1c-of-2", ring(2), "G1c", 1, {"length": 2, "ops": [2, 3]}),
    ("G1c-of-5", ring(5), "G1c", 1, {"length": 5}),
    ("G1c-broken-is-not", ring(4, broken=True), "G1c", 0, {}),
    # T1 completed, then T2 was invoked and wrote what T1 had read: read from the future
    ("G1c-realtime", txn(1, "ok", "[[:send 0 [0 1]] [:poll {2 [[0 2]]}]]") + txn(2, "ok", "[[:send 2 [0 2]]]"),
     "G1c-realtime", 1, {"length": 2}),
    # with plain sends and polls too (Jepsen's graph is over every send, poll and txn op): a poll completed,
    # then a send was invoked whose value that poll had read
    ("G1c-realtime-of-a-send-and-a-poll", poll(5, {0: [(0, 1)]}) + send(0, 0, 1, 0), "G1c-realtime", 1,
     {"length": 2, "processes": [5, 0]}),
    ("G1c-realtime-poll-after-send-is-not", send(0, 0, 1, 0) + poll(5, {0: [(0, 1)]}), "G1c-realtime", 0, {}),
    ("G1c-realtime-concurrent-is-not", [op("invoke", 1, "txn", "[[:send 0 1] [:poll]]"),
                                        op("invoke", 2, "txn", "[[:send 2 2]]"),
                                        op("ok", 1, "txn", "[[:send 0 [0 1]] [:poll {2 [[0 2]]}]]"),
                                        op("ok", 2, "txn", "[[:send 2 [0 2]]]")], "G1c-realtime", 0, {}),
    # one op sending one value to two keys (Jepsen's values are unique per key only): each send its own
    ("one-value-to-two-keys-is-clean", txn(0, "ok", "[[:send 0 [0 1]] [:send 2 [3 1]]]")
     + poll(5, {0: [(0, 1)], 2: [(3, 1)]}), "duplicate", 0, {}),
    ("one-value-to-two-keys-proven-info-conflicts", txn(0, "info", "[[:send 0 [0 1]] [:send 2 1]]")
     + send(1, 0, 2, 0) + poll(5, {2: [(5, 1)]}), "inconsistent-offsets", 1, {"offset": 0, "values": ["1", "2"]}),
    ("inconsistent-unproven-info-is-not", send(0, 0, 1, 0) + txn(1, "info", "[[:send 0 [0 2]]]")
     + poll(5, {0: [(0, 1)]}), "inconsistent-offsets", 0, {}),
    ("poll-skip", SEND_0_1_2 + poll(5, {0: [(0, 1)]}) + poll(5, {0: [(2, 3)]}), "poll-skip", 1,
     {"from_offset": 0, "to_offset": 2, "missed": 1, "process": 5}),
    # every completed poll is judged against the last ok one; a failed or indeterminate one moves nothing on
    ("poll-skip-by-a-failed-poll", SEND_0_1_2 + poll(5, {0: [(0, 1)]}) + failed_poll(5, "info", {0: [(2, 3)]}),
     "poll-skip", 1, {"from_offset": 0, "to_offset": 2, "missed": 1}),
    ("poll-skip-judged-from-the-last-ok-poll", SEND_0_1_2 + poll(5, {0: [(0, 1)]}) + failed_poll(5, "fail", {0: [(1, 2)]})
     + poll(5, {0: [(1, 2), (2, 3)]}), "poll-skip", 0, {}),
    ("nonmonotonic-poll-by-a-failed-poll", SEND_0_1_2 + poll(5, {0: [(0, 1), (1, 2)]})
     + failed_poll(5, "fail", {0: [(0, 1)]}), "nonmonotonic-poll", 1, {"from_offset": 1, "to_offset": 0}),
    ("poll-skip-kept-by-assign", SEND_0_1_2 + poll(5, {0: [(0, 1)]}) + assign(5, [0, 1]) + poll(5, {0: [(2, 3)]}),
     "poll-skip", 1, {"missed": 1}),
    ("poll-skip-forgotten-by-assign", SEND_0_1_2 + poll(5, {0: [(0, 1)]}) + assign(5, [1]) + poll(5, {0: [(2, 3)]}),
     "poll-skip", 0, {}),
    ("poll-skip-allowed-under-subscribe", assign(5, [0], "subscribe") + SEND_0_1_2 + poll(5, {0: [(0, 1)]})
     + poll(5, {0: [(2, 3)]}), "poll-skip", 0, {}),
    # a crashed process's successor (Jepsen gives it a new process number) starts afresh
    ("poll-skip-not-across-a-crash", SEND_0_1_2 + poll(5, {0: [(0, 1)]}) + [op("info", 5, "crash", "nil")]
     + poll(15, {0: [(2, 3)]}), "poll-skip", 0, {}),
    ("nonmonotonic-poll", send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(0, 1), (1, 2)]})
     + poll(5, {0: [(1, 2)]}), "nonmonotonic-poll", 1, {"from_offset": 1, "to_offset": 1}),
    ("nonmonotonic-poll-forgotten-by-assign", send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(0, 1), (1, 2)]})
     + assign(5, [1]) + poll(5, {0: [(0, 1)]}), "nonmonotonic-poll", 0, {}),
    ("nonmonotonic-send", send(0, 0, 1, 1) + send(0, 0, 2, 0) + poll(5, {0: [(0, 2), (1, 1)]}), "nonmonotonic-send",
     1, {"from_offset": 1, "to_offset": 0, "process": 0}),
    ("nonmonotonic-send-two-producers-is-not", send(0, 0, 1, 1) + send(1, 0, 2, 0) + poll(5, {0: [(0, 2), (1, 1)]}),
     "nonmonotonic-send", 0, {}),
    ("int-poll-skip", SEND_0_1_2 + poll(5, {0: [(0, 1), (2, 3)]}), "int-poll-skip", 1,
     {"from_offset": 0, "to_offset": 2, "missed": 1}),
    ("int-poll-skip-rebalanced", SEND_0_1_2 + [op("invoke", 5, "poll", "[[:poll]]"),
                                               op("ok", 5, "poll", f"[[:poll {reads({0: [(0, 1), (2, 3)]})}]]",
                                                  ", :rebalance-log [{:keys [0]}]")], "int-poll-skip", 0, {}),
    ("int-poll-skip-across-two-poll-mops", SEND_0_1_2 + txn(5, "ok", f"[[:poll {reads({0: [(0, 1)]})}] [:send 1 [0 8]] "
                                                                     f"[:poll {reads({0: [(2, 3)]})}]]"),
     "int-poll-skip", 1, {"missed": 1}),
    ("int-nonmonotonic-poll", send(0, 0, 1, 0) + send(0, 0, 2, 1) + poll(5, {0: [(1, 2), (0, 1)]}),
     "int-nonmonotonic-poll", 1, {"from_offset": 1, "to_offset": 0}),
    ("int-nonmonotonic-send", txn(0, "ok", "[[:send 0 [1 1]] [:send 0 [0 2]]]") + poll(5, {0: [(0, 2), (1, 1)]}),
     "int-nonmonotonic-send", 1, {"from_offset": 1, "to_offset": 0}),
    ("int-send-in-order", txn(0, "ok", "[[:send 0 [0 1]] [:send 0 [1 2]]]") + poll(5, {0: [(0, 1), (1, 2)]}),
     "int-nonmonotonic-send", 0, {}),
    ("G1a", send(0, 0, 7, None, kind="fail") + send(0, 0, 1, 1) + poll(5, {0: [(0, 7), (1, 1)]}), "G1a", 1,
     {"value": "7", "offset": 0, "process": 5}),
    ("G1a-info-read-is-not", send(0, 0, 8, None, kind="fail") + send(0, 0, 7, None, kind="info")
     + poll(5, {0: [(0, 7)]}), "G1a", 0, {}),
    ("precommitted-read", txn(0, "ok", f"[[:send 0 [0 1]] [:poll {reads({0: [(0, 1)]})}]]"), "precommitted-read", 1,
     {"value": "1", "process": 0}),
    ("precommitted-other-value-is-not", send(1, 0, 1, 0) + txn(0, "ok", f"[[:send 0 [1 2]] [:poll {reads({0: [(0, 1)]})}]]"),
     "precommitted-read", 0, {}),
]
ALL_JEPSEN = ["lost-write", "unseen", "duplicate", "inconsistent-offsets", "poll-skip", "nonmonotonic-poll",
              "nonmonotonic-send", "int-poll-skip", "int-nonmonotonic-poll", "int-nonmonotonic-send", "G1a",
              "precommitted-read"]


def _all(history: History, engine: str = "local") -> dict:
    return {n: unsituated(r.to_json()) for n, r in run_checks(history, engine=engine).results.items()}


@pytest.mark.parametrize("name,lines,check,count,fields", CASES, ids=[c[0] for c in CASES])
def test_jepsens_rule_finds_what_is_planted_and_not_the_near_miss(tmp_path: Path, name, lines, check, count, fields):
    history = load(tmp_path, lines)
    assert history.problems == []
    result = run_checks(history, [check], engine="local").results[check]
    assert result.counts["anomalies"] == count, result.to_json()
    assert (result.valid is False) is (count > 0), result.to_json()
    if fields:
        assert {k: result.witnesses[0][k] for k in fields} == fields


def _jsonl_round_trip(history: History, path: Path) -> History:
    import json
    path.write_text("".join(json.dumps(o) + "\n" for o in history.ops))
    return History.from_path(path)


@pytest.mark.parametrize("name,lines,check,count,fields", CASES, ids=[c[0] for c in CASES])
def test_jepsen_histories_survive_our_jsonl_and_the_export(tmp_path: Path, name, lines, check, count, fields):
    history = load(tmp_path, lines)
    want = _all(history)
    assert want[check]["counts"]["anomalies"] == count
    assert _all(_jsonl_round_trip(history, tmp_path / "h.jsonl")) == want
    exported = History.from_path(write_jepsen_kafka(history.ops, tmp_path / "out.edn"))
    assert exported.problems == []
    assert _all(exported) == want


def test_jepsen_histories_get_jepsens_checks_by_default_and_ours_do_not(tmp_path: Path):
    plain = load(tmp_path, CASES[0][1])
    assert set(run_checks(plain, engine="local").results) == set(JEPSEN_CHECKS) | {
        "key-order", "truncation-undetected", "int-poll-skip", "int-nonmonotonic-poll", "int-nonmonotonic-send",
        "int-send-skip", "G1a", "G0", "G1c", "G0-realtime", "G1c-realtime"}
    ours = synthetic.generate(seed=3, events=300).ops
    assert not {"G1a", "int-poll-skip", "G0"} & set(run_checks(ours, engine="local").results)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_cycles_of_2_to_6_are_found_and_near_misses_are_not(tmp_path: Path, n: int):
    """A ring of n transactions, each reading the next one's write, is one G1c of length n; the same
    ring with one read missing is none. A ring of writes is one G0, which Jepsen's Kafka checker
    allows: counted as allowed, the verdict stays clean."""
    for kind, name in (("read", "G1c"), ("write", "G0")):
        whole = run_checks(load(tmp_path, ring(n, kind), f"{kind}.edn"), [name], engine="local").results[name]
        broken = run_checks(load(tmp_path, ring(n, kind, broken=True), f"{kind}-broken.edn"), [name],
                            engine="local").results[name]
        if name == "G1c":
            assert whole.valid is False and [w["length"] for w in whole.witnesses] == [n]
            assert sorted(whole.witnesses[0]["ops"]) == list(range(n, 2 * n))  # the completions' op maps
            assert all(step["kind"] == "wr" for step in whole.witnesses[0]["steps"])
        else:
            assert whole.valid is True and whole.counts["allowed"] == 1
        assert broken.valid is True and broken.counts["anomalies"] == 0 and broken.counts.get("allowed") == 0


def test_spark_finds_the_cycles_the_local_engine_finds(spark, tmp_path: Path):
    """Rings of reads (G1c) and of writes (G0, allowed), whole and broken, a poll that read a later
    send (G1c-realtime) and a transaction's sends apart (int-send-skip, allowed), side by side: the
    same results on Spark, whose edges come to the driver as Arrow columns."""
    names = ["G0", "G1c", "G0-realtime", "G1c-realtime", "int-send-skip"]
    skipped = txn(0, "ok", "[[:send 0 [0 1]] [:send 0 [2 2]]]") + send(1, 0, 3, 1) + poll(5, {0: [(0, 1), (1, 3)]})
    history = _side_by_side([load(tmp_path, ring(n, kind, broken), f"{kind}{n}{broken}.edn")
                             for kind in ("read", "write") for n, broken in ((3, False), (4, True))]
                            + [load(tmp_path, poll(5, {0: [(0, 1)]}) + send(0, 0, 1, 0), "future.edn"),
                               load(tmp_path, skipped, "skipped.edn")])
    local = {n: r.to_json() for n, r in run_checks(history, names, engine="local").results.items()}
    # G0: the ring of writes, and the transaction whose two writes another's came between
    assert local["G1c"]["valid"] is False and local["G0"]["counts"]["allowed"] == 2
    assert local["G1c-realtime"]["counts"]["anomalies"] == 1 and local["int-send-skip"]["counts"]["allowed"] == 1
    assert {n: r.to_json() for n, r in run_checks(history, names, engine="spark").results.items()} == local


def test_cycles_run_on_every_jepsen_history_and_judge_nothing_of_ours(tmp_path: Path):
    """Jepsen's graph is made of its send, poll and txn ops, transactions or not; a history of ours
    has none, so asked by name the cycle checks are unknown there, saying why."""
    plain = load(tmp_path, CASES[0][1], "plain.edn")
    assert {"G0", "G1c", "G0-realtime", "G1c-realtime"} <= set(run_checks(plain, engine="local").results)
    ours = run_checks(synthetic.generate(seed=3, events=300).ops, ["G1c"], engine="local").results["G1c"]
    assert ours.valid == "unknown" and "no Jepsen send, poll or txn op" in ours.error


@pytest.mark.parametrize("second,other,allowed", [(2, 1, 1), (1, 2, 0)], ids=["skips", "adjacent"])
def test_int_send_skip_is_counted_as_jepsen_allows_it(tmp_path: Path, second: int, other: int, allowed: int):
    """Two sends of a key in one transaction landing apart (another's write between them): Jepsen
    reports int-send-skip and always allows it; so here it is counted, never an anomaly."""
    history = load(tmp_path, txn(0, "ok", f"[[:send 0 [0 1]] [:send 0 [{second} 2]]]") + send(1, 0, 3, other)
                   + poll(5, {0: sorted([(0, 1), (second, 2), (other, 3)])}))
    result = run_checks(history, ["int-send-skip"], engine="local").results["int-send-skip"]
    assert result.valid is True and result.counts == {"anomalies": 0, "send_pairs": 1, "allowed": allowed}


def _side_by_side(histories: list[History]) -> History:
    """The histories as one, each on topics and processes of its own (a Spark pass costs seconds)."""
    ops: list[dict] = []
    for i, h in enumerate(histories):
        for o in h.ops:
            o = {**o, "index": len(ops), "process": o["process"] + 1000 * i if isinstance(o["process"], int)
                 else o["process"], "jepsen_op": o.get("jepsen_op", 0) + 1000 * i}
            if o.get("topic"):
                o["topic"] = f"c{i}{o['topic']}"
            if o["f"] in ("on_partitions_assigned", "assign", "subscribe"):
                o["value"] = [[f"c{i}{t}", p] for t, p in o["value"]]
            ops.append(o)
    return History(ops)


@pytest.mark.nightly  # assign 42 s, subscribe 117 s: nightly to keep CI under 30 minutes (the engines'
# agreement is checked in CI on chaoskit's own histories, tests/checkers/spark/test_checks.py)
@pytest.mark.parametrize("subscribed", [False, True], ids=["assign", "subscribe"])
def test_spark_agrees_with_local_on_every_jepsen_case(spark, tmp_path: Path, subscribed: bool):
    cases = [(name, lines) for name, lines, *_ in CASES if ("subscribe" in name) is subscribed]
    history = _side_by_side([load(tmp_path, lines, f"{name}.edn") for name, lines in cases + [("clean", CLEAN)]])
    local = _all(history)
    assert {n for n, r in local.items() if r["valid"] is False} >= ({"poll-skip"} if not subscribed else set())
    assert _all(history, "spark") == local


def test_an_export_keeps_the_keys_a_jepsen_history_named(tmp_path: Path):
    """Read from Jepsen, written back: each micro-op names the key the history did, and the header
    maps only those keys (our own topics would take integers no Jepsen key holds)."""
    from chaoskit.history.jepsen_kafka_write import jepsen_kafka_lines
    lines = send(0, 3, 1, 0) + [op("invoke", 0, "send", "[[:send :x 2]]"), op("ok", 0, "send", "[[:send :x [0 2]]]"),
                                op("invoke", 5, "poll", "[[:poll]]"),
                                op("ok", 5, "poll", "[[:poll {3 [[0 1]], :x [[0 2]], [1 :y] [[0 9]]}]]")]
    history = load(tmp_path, lines)
    exported = list(jepsen_kafka_lines(history.ops))
    assert ':keys {:x [":x" 0], [1 :y] ["[1 :y]" 0], 3 ["t1" 1]}' in exported[0]  # sorted by topic
    assert '[:send :x [0 "2"]]' in exported[4]
    for read in ('{3 [[0 "1"]]}', '{:x [[0 "2"]]}', '{[1 :y] [[0 "9"]]}'):  # one poll op per topic read
        assert any(f"[:poll {read}]" in line for line in exported), read
    again = load(tmp_path, exported, "again.edn")
    assert _results(again) == _results(history)
