"""Jepsen's Kafka workload histories (jepsen.tests.kafka, history.edn) as ops of our schema.

A Jepsen Kafka op's value is a vector of micro-ops: `[:send k v]` (completed as `[:send k [offset v]]`,
offset nil when unknown) and `[:poll]` (completed as `[:poll {k [[offset v] ...], ...}]`); `:send`
and `:poll` ops hold only sends or polls, `:txn` both. Each micro-op becomes an op of ours:

- a send micro-op: a `send` op of the Jepsen op's process and type, with `topic` and `partition` from
  its key, `value` v and, when completed as a pair, `offset`;
- a completion's polls: one `poll` op per topic they read, whose records are `[partition, offset,
  nil, v, nil]` (Jepsen records no message key or leader epoch); consecutive poll micro-ops of one
  op are one poll;
- `:assign` / `:subscribe` completed `ok` or `info`: an `on_partitions_assigned` op (our position
  reset) naming the keys' topic-partitions; their invokes and failures keep their own `f`;
- each entry `{:keys [...]}` of a completion's `:rebalance-log` (a rebalance during the op): an
  `on_partitions_assigned` op before the op's own;
- any other op (`:crash`, nemesis ops, `:debug-topic-partitions`) is kept as it is (history.jepsen).

Keys: kafka.clj treats keys as opaque values and leaves their mapping to topic-partitions to the
client; Jepsen's Kafka/Redpanda client maps integer key k to topic `t<k div 2>`, partition `k mod 2`
(two partitions per topic), and so do we. Any other key (a keyword, a string, a negative number, a
vector: Jepsen's checker tests use `:x`, `:y`) is a topic of its own, named by the key's EDN text
(`:x`, `"a"`, `-1`), partition 0: one partition per key, the same whatever the order keys appear in,
and a witness names the key as the history wrote it. A history `chaoskit export` wrote starts with an op of process `:chaoskit`, f
`:chaoskit-export`, whose value names its own key map (`{:keys {0 ["orders" 0] ...}}`; a nil
partition stands for a send whose partition was never known) and says values are JSON texts
(`:values :json-text`): every micro-op value is then an EDN string holding the value's canonical
JSON, which is decoded back.

Other keys of a Jepsen op (`:time` as `time_ns`, `:error`, extras) are copied onto each op it gives.
Each op a send, poll, txn, assign or subscribe gives also keeps `jepsen_f`, that Jepsen op's f, and
`jepsen_op`, its ordinal among the history's op maps (0, 1, ...): which ops came from one Jepsen op
(one transaction), and that the history is Jepsen's, whose checks then follow Jepsen's rules
(docs/history.md). A history chaoskit exported carries no such keys of its own: its ops keep
whichever they held (an exported Jepsen history keeps them, our own has none).
Ops keep Jepsen's `:index` when each Jepsen op gave one op; otherwise they are numbered in order and
keep Jepsen's as `jepsen_index`. A micro-op that cannot be mapped is a problem "line N: micro-op i:
why"; the op's other micro-ops and the other lines still load.
"""
from __future__ import annotations

import json
from itertools import islice
from typing import Any, Callable, Iterable

from chaoskit.history import edn
from chaoskit.history.jepsen import Problems, edn_forms, op_from_map
from chaoskit.history.schema import Op, SchemaError, check_op

MOP_FS = ("send", "poll", "txn")  # ops whose value is a vector of micro-ops
SUBSCRIPTION_FS = ("assign", "subscribe")
PARTITIONS_PER_TOPIC = 2  # Jepsen's Kafka client: key k is topic t<k div 2>, partition k mod 2
EXPORT_PROCESS, EXPORT_F = "chaoskit", "chaoskit-export"  # the header op of a history chaoskit wrote
JSON_TEXT = "json-text"
RESET = "on_partitions_assigned"
JEPSEN_F, JEPSEN_OP = "jepsen_f", "jepsen_op"  # on each op of a Jepsen send/poll/txn/assign/subscribe
TopicPartition = tuple[Any, "int | None"]


def jepsen_topic_partition(key: int) -> TopicPartition:
    """Jepsen's Kafka client's topic-partition for integer key `key`."""
    return f"t{key // PARTITIONS_PER_TOPIC}", key % PARTITIONS_PER_TOPIC


def key_of(tp: TopicPartition) -> Any:
    """The key whose topic-partition `tp` is (key_topic_partition's inverse), None when no key maps
    to it (our own topics: `orders`/3)."""
    topic, partition = tp
    if not isinstance(topic, str) or partition is None:
        return None
    if topic[:1] == "t" and topic[1:].isdigit() and partition in range(PARTITIONS_PER_TOPIC):
        key: Any = int(topic[1:]) * PARTITIONS_PER_TOPIC + partition
    else:
        try:
            key = edn.loads(topic)
        except edn.EdnError:
            return None
    try:
        return key if key_topic_partition(key) == tp else None
    except edn.EdnError:
        return None


def key_topic_partition(key: Any) -> TopicPartition:
    """The topic-partition of any EDN key: Jepsen's client's for a non-negative integer, else the
    key's own topic (its EDN text), partition 0."""
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        return jepsen_topic_partition(key)
    return edn.dumps(key), 0


def is_header(m: Any) -> bool:
    return isinstance(m, dict) and m.get("process") == EXPORT_PROCESS and m.get("f") == EXPORT_F


def is_kafka_op(m: Any) -> bool:
    """A Jepsen op only the Kafka workload writes: send/poll/txn with send or poll micro-ops."""
    if not isinstance(m, dict) or m.get("f") not in MOP_FS or not isinstance(m.get("value"), list):
        return False
    mops = m["value"]
    return bool(mops) and all(isinstance(x, list) and x and x[0] in ("send", "poll") for x in mops)


def looks_like_jepsen_kafka(lines: Iterable[str], limit: int = 200) -> bool:
    """Whether an EDN history is the Kafka workload's: one of its first `limit` ops is a send, poll
    or txn of send/poll micro-ops, or it starts with chaoskit's export header."""
    for _n, m in edn_forms(islice(lines, limit)):
        if is_header(m) or is_kafka_op(m):
            return True
    return False


class _Reading:
    """What the header (if any) said: the key map and how micro-op values are written."""

    def __init__(self) -> None:
        self.keys: dict[int, TopicPartition] = {}
        self.json_values = False
        self.exported = False  # chaoskit wrote it: ops keep their own jepsen_f / jepsen_op, if any

    def take_header(self, m: dict) -> None:
        value = m.get("value") if isinstance(m.get("value"), dict) else {}
        keys = value.get("keys") or {}
        if not isinstance(keys, dict) or not all(isinstance(tp, list) and len(tp) == 2 for tp in keys.values()):
            raise SchemaError(f"the {EXPORT_F} header's :keys maps keys to [topic partition], got {keys!r}")
        self.keys = {k: (tp[0], tp[1]) for k, tp in keys.items()}
        self.json_values = value.get("values") == JSON_TEXT
        self.exported = True

    def topic_partition(self, key: Any) -> TopicPartition:
        found = self.keys.get(edn.hashable(key))
        return found if found is not None else key_topic_partition(key)

    def value(self, v: Any) -> Any:
        if not self.json_values or v is None:
            return v
        if not isinstance(v, str):
            raise SchemaError(f"values are JSON texts in this history, got {v!r}")
        try:
            return json.loads(v)
        except json.JSONDecodeError as e:
            raise SchemaError(f"value {v!r} is not JSON ({e.msg})") from None


def read_jepsen_kafka_lines(lines: Iterable[str]) -> tuple[list[Op], Problems]:
    """Our ops from a Jepsen Kafka history.edn, and the problems of what could not be mapped."""
    ops: list[Op] = []
    problems: Problems = []
    reading = _Reading()
    one_each = True  # every Jepsen op gave exactly one op: its :index can stay
    ordinal = 0
    invoked: dict[Any, list[Op]] = {}  # process -> the sends its open invocation gave
    for n, m in _by_index(edn_forms(lines)):
        try:
            if isinstance(m, edn.EdnError):
                raise m
            if is_header(m):
                reading.take_header(m)
                continue
            got = ops_of(m, reading, lambda i, why: problems.append(f"line {n}: micro-op {i}: {why}"), ordinal)
        except (edn.EdnError, SchemaError) as e:
            problems.append(f"line {n}: {e}")
            continue
        finally:
            ordinal += not is_header(m)
        if not reading.exported:  # Jepsen's processes have one op open at a time; ours may have several sends
            _complete_sends(got, invoked)
        one_each = one_each and len(got) == 1
        ops += got
    _number(ops, one_each)
    return ops, problems


def _by_index(forms: Iterable[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """The forms in the history's order: by :index when every op map has one (Jepsen orders a history
    by it, whatever order its lines were written in), else as written."""
    forms = list(forms)
    indices = [m.get("index") for _n, m in forms if isinstance(m, dict) and not is_header(m)]
    if all(isinstance(i, int) and not isinstance(i, bool) for i in indices) and indices != sorted(indices):
        return sorted(forms, key=lambda f: -1 if not isinstance(f[1], dict) or is_header(f[1]) else f[1]["index"])
    return forms


def _complete_sends(got: list[Op], invoked: dict[Any, list[Op]]) -> None:
    """A completion's sends name what was sent (Jepsen takes a send's value and key from its
    completion): the sends its process's invocation gave take them, micro-op by micro-op."""
    sends = [op for op in got if op["f"] == "send"]
    if not sends:
        return
    process = sends[0].get("process")
    if sends[0]["type"] == "invoke":
        invoked[process] = sends
        return
    before = invoked.pop(process, None)
    if before is not None and len(before) == len(sends):
        for inv, done in zip(before, sends):
            inv.update(value=done.get("value"), topic=done.get("topic"), partition=done.get("partition"))


def _number(ops: list[Op], keep: bool) -> None:
    indices = [op.get("index") for op in ops]
    if keep and all(isinstance(i, int) for i in indices) and all(a < b for a, b in zip(indices, indices[1:])):
        return
    for op in ops:  # History numbers them by position
        if op.get("index") is not None:
            op["jepsen_index"] = op.pop("index")


def ops_of(m: Any, reading: _Reading, problem: Callable[[int, str], None], ordinal: int = 0) -> list[Op]:
    """Our ops for one Jepsen op map (the `ordinal`-th); `problem(i, why)` hears of each micro-op that
    cannot be mapped."""
    if not isinstance(m, dict):
        raise SchemaError(f"a Jepsen op is a map, got {type(m).__name__}")
    f = m.get("f")
    if f not in MOP_FS and (f not in SUBSCRIPTION_FS or reading.exported):  # an export's name [topic partition]s
        return [op_from_map(m)]
    base = op_from_map({k: v for k, v in m.items() if k not in ("value", "rebalance-log")})
    if not reading.exported:
        base |= {JEPSEN_F: f, JEPSEN_OP: ordinal}
    done = base["type"] in ("ok", "info")
    out = [_op(base, f=RESET, type="ok", value=_topic_partitions(e.get("keys") if isinstance(e, dict) else e,
                                                                 reading))
           for e in _rebalances(m) if done]
    if f in SUBSCRIPTION_FS:
        return out + [_op(base, f=RESET if done else f, value=_topic_partitions(m.get("value"), reading))]
    mops = m.get("value")
    if not isinstance(mops, list):
        raise SchemaError(f"a :{f} op's value is a vector of micro-ops, got {edn.dumps(mops)}")
    polls: list[tuple[int, Any, Any]] | None = None  # (micro-op, key, pairs) read by the poll micro-ops just before
    for i, mop in enumerate(mops):
        try:
            if not isinstance(mop, list) or not mop or mop[0] not in ("send", "poll"):
                raise SchemaError(f"a micro-op is [:send k v] or [:poll ...], got {edn.dumps(mop)}")
            if mop[0] == "poll":
                polls = (polls or []) + [(i, key, pairs) for key, pairs in _polled(mop, base["type"])]
                continue
            out += _polls(base, polls, reading, problem)
            polls = None
            out.append(_send(base, mop, reading))
        except SchemaError as e:
            problem(i, str(e))
    return out + _polls(base, polls, reading, problem)


def _rebalances(m: dict) -> list[Any]:
    log = m.get("rebalance-log")
    if log is not None and not isinstance(log, list):
        raise SchemaError(f"a :rebalance-log is a vector of {{:keys [...]}}, got {edn.dumps(log)}")
    return log or []


def _op(base: Op, **fields: Any) -> Op:
    return check_op(base | fields)


def _topic_partitions(keys: Any, reading: _Reading) -> list[list[Any]]:
    if not isinstance(keys, list):
        raise SchemaError(f"assign/subscribe/rebalance keys are a vector of keys, got {edn.dumps(keys)}")
    return sorted(([*reading.topic_partition(k)] for k in keys), key=lambda tp: (str(tp[0]), tp[1] or 0))


def _send(base: Op, mop: list, reading: _Reading) -> Op:
    if len(mop) != 3:
        raise SchemaError(f"a send micro-op is [:send k v], got {edn.dumps(mop)}")
    _, key, v = mop
    topic, partition = reading.topic_partition(key)
    offset = None
    if base["type"] != "invoke" and isinstance(v, list):  # completed: [offset v] (Jepsen values are not vectors)
        if len(v) != 2 or not (v[0] is None or (isinstance(v[0], int) and not isinstance(v[0], bool))):
            raise SchemaError(f"a completed send's [offset value] has an integer or nil offset, got {edn.dumps(v)}")
        offset, v = v
    return _op(base, f="send", value=reading.value(v), topic=topic, partition=partition, offset=offset)


def _polled(mop: list, kind: str) -> list[tuple[Any, Any]]:
    if len(mop) == 1:
        if kind == "ok":
            raise SchemaError("an ok poll micro-op holds what it read: [:poll {k [[offset v] ...]}]")
        return []
    if len(mop) != 2 or not isinstance(mop[1], dict):
        raise SchemaError(f"a poll micro-op is [:poll] or [:poll {{k [[offset v] ...]}}], got {edn.dumps(mop)}")
    return list(mop[1].items())


def _polls(base: Op, polled: list[tuple[int, Any, Any]] | None, reading: _Reading,
           problem: Callable[[int, str], None]) -> list[Op]:
    """One poll op per topic read by a run of consecutive poll micro-ops (one of no topic when they
    read nothing); none without such a run (`polled` None)."""
    if polled is None:
        return []
    by_topic: dict[Any, list[list[Any]]] = {}
    for i, key, pairs in polled:
        try:
            topic, partition = reading.topic_partition(key)
            if not isinstance(pairs, list):
                raise SchemaError(f"key {key}'s reads are a vector of [offset value], got {edn.dumps(pairs)}")
        except SchemaError as e:
            problem(i, str(e))
            continue
        records = by_topic.setdefault(topic, [])
        for pair in pairs:
            try:
                records.append(_record(partition, pair, reading))
            except SchemaError as e:
                problem(i, str(e))
    ok = base["type"] == "ok"
    if not by_topic:
        return [_op(base, f="poll", value=[] if ok else None)]
    return [_op(base, f="poll", topic=topic, value=records if ok or records else None)
            for topic, records in by_topic.items()]


def _record(partition: int | None, pair: Any, reading: _Reading) -> list[Any]:
    if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int) and not isinstance(pair[0], bool)):
        raise SchemaError(f"a read is [offset value] with an integer offset, got {edn.dumps(pair)}")
    return [partition, pair[0], None, reading.value(pair[1]), None]


def jepsen_fs(history: Any) -> set[str]:
    """The Jepsen op kinds (`jepsen_f`) a History's ops came from: none unless it was read from a
    Jepsen Kafka history (then its checks follow Jepsen's rules); "txn" when it holds transactions.
    A Parquet history is asked without loading its ops; the answer is kept on the History."""
    if getattr(history, "_jepsen_fs", None) is None:
        if history._ops is not None:
            found = {op[JEPSEN_F] for op in history._ops if op.get(JEPSEN_F) is not None}
        else:
            import pyarrow.compute as pc
            import pyarrow.parquet as pq
            extra = pq.read_table(history.source, columns=["extra"]).column("extra").drop_null()
            extras = extra.filter(pc.match_substring(extra, JEPSEN_F)).to_pylist()  # none in our own histories
            found = {json.loads(e).get(JEPSEN_F) for e in extras} - {None}
        history._jepsen_fs = found
    return history._jepsen_fs
