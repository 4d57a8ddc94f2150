"""The sequential specifications the search checks against: cas-register, kv (string values, as
Porcupine's key-value model), list-append (list values) and the Kafka partition log.

A model turns one completed (or indeterminate) history op into sub-ops `(key, f, arg)`: `key`
names the independent object it touches (a register key, a kv key, a topic partition), which
is how a history is split P-compositionally; `arg` is everything the step needs, already frozen
(hashable), including the observed result of a read. A step maps a state to the next state or
to INCONSISTENT when the op could not have returned what it did from that state. States are
immutable and hashable: Lowe's memoization caches (linearized set, state) pairs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable

INCONSISTENT = object()  # a step's answer when the op cannot take effect in that state

Step = Callable[[Any, Any], Any]
SubOp = tuple[Hashable, str, Any]  # (key, f, arg)


class HistoryError(ValueError):
    """An op the model cannot read; the message names the op and what to fix."""


def freeze(value: Any) -> Any:
    """JSON-ish values made hashable: lists become tuples, dicts sorted item tuples (numpy arrays
    and scalars, as Parquet and pandas give them, first become Python values)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    return value


@dataclass(frozen=True)
class Model:
    name: str
    initial: Any
    steps: dict[str, Step]
    # (invoke, completion or None when indeterminate) -> sub-ops; [] drops the op
    interpret: Callable[[dict, dict | None], list[SubOp]]
    fs: frozenset[str]  # the history f names the model reads
    read_only: frozenset[str]  # ops whose step never changes the state (the search places them greedily)
    # f -> (state, arg) -> True when no sequence of ops outside `resets` can make this read fit
    doomed: dict[str, Callable[[Any, Any], bool]] = field(default_factory=dict)
    resets: frozenset[str] = frozenset()
    # (read arg, reset f, reset arg) -> whether that reset op can lead to what the read saw; the search
    # drops a configuration holding a doomed read when no such op can still come before it returns
    enables: Callable[[Any, str, Any], bool] = lambda seen, f, arg: True
    # An indeterminate op whose mark nobody sees may be dropped before the search: placed anywhere,
    # the next op to touch the state would have to overwrite it blindly, so it changes no outcome.
    # mark(f, arg): the value it leaves (None: never drop it); seen(f, arg): values an op observes.
    mark: Callable[[str, Any], Any] | None = None
    seen: Callable[[str, Any], Iterable[Any]] = lambda f, arg: ()
    # every value observed -> whether a mark shows among them: equal to one by default; kv text stays
    # visible inside later, longer strings
    visible: Callable[[Iterable[Any]], Callable[[Any], bool]] = lambda seen: set(seen).__contains__
    ignores_other_ops: bool = False  # Kafka histories hold callbacks, admin ops... which the log model skips


def _where(op: dict) -> str:
    return f"op {op.get('index', '?')} (process {op.get('process')!r}, f {op.get('f')!r})"


def _observed(invoke: dict, completion: dict | None) -> Any:
    """What the op returned: the completion's value; None when it never completed."""
    return None if completion is None else completion.get("value")


def _written(invoke: dict, completion: dict | None) -> Any:
    value = invoke.get("value")
    if value is None and completion is not None:
        value = completion.get("value")
    return value


def _key(invoke: dict, completion: dict | None, required: bool) -> Any:
    key = invoke.get("key")
    if key is None and completion is not None:
        key = completion.get("key")
    if key is None and required:
        raise HistoryError(f"{_where(invoke)}: key-value ops need a `key` column naming the key they touch")
    return freeze(key)


# --- cas-register: read, write, cas [old new] ----------------------------------------------------
def _register_read(state: Any, seen: Any) -> Any:
    return state if state == seen else INCONSISTENT


def _differs(state: Any, seen: Any) -> bool:
    return state != seen


def _register_enables(seen: Any, f: str, arg: Any) -> bool:
    return (arg[1] if f == "cas" else arg) == seen


def _register_mark(f: str, arg: Any) -> Any:
    return arg[1] if f == "cas" else arg


def _register_seen(f: str, arg: Any) -> Iterable[Any]:
    # a cas observes its old value just as a read observes what it returns
    return (arg,) if f == "read" else (arg[0],) if f == "cas" else ()


def _register_write(state: Any, value: Any) -> Any:
    return value


def _register_cas(state: Any, old_new: tuple) -> Any:
    return old_new[1] if state == old_new[0] else INCONSISTENT


def _register_ops(invoke: dict, completion: dict | None) -> list[SubOp]:
    f = invoke["f"]
    key = _key(invoke, completion, required=False)
    if f == "read":
        # a read that never returned constrains nothing
        return [] if completion is None else [(key, f, freeze(_observed(invoke, completion)))]
    if f == "write":
        return [(key, f, freeze(_written(invoke, completion)))]
    value = _written(invoke, completion)
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise HistoryError(f"{_where(invoke)}: a cas value is [old, new], got {value!r}")
    return [(key, f, freeze(value))]


def _keyed_ops(invoke: dict, completion: dict | None, value: Callable[[dict, str, Any], Any]) -> list[SubOp]:
    """get/put/append on a `key`; `value(op, f, v)` turns what was written or read into the step's arg."""
    f = invoke["f"]
    key = _key(invoke, completion, required=True)
    if f == "get":
        # a get that never returned constrains nothing
        return [] if completion is None else [(key, f, value(invoke, f, _observed(invoke, completion)))]
    return [(key, f, value(invoke, f, _written(invoke, completion)))]


# --- kv: get, put, append on strings (Porcupine's key-value model) -------------------------------
def _kv_append(state: str, text: str) -> str:
    return state + text


def _kv_get_doomed(state: str, seen: str) -> bool:
    # appends only lengthen the string: a get can still fit while what it saw extends the state
    return not seen.startswith(state)


def _kv_put_enables(seen: str, f: str, text: str) -> bool:
    return seen.startswith(text)


def _kv_mark(f: str, text: str) -> str:
    return text


def _kv_seen(f: str, text: str) -> Iterable[str]:
    return (text,) if f == "get" else ()


def _kv_visible(seen: Iterable[str]) -> Callable[[str], bool]:
    # a put's or append's text stays inside every later string until a put overwrites it; NUL keeps
    # observations apart (a mark holding NUL may match across two: kept, which is merely slower)
    return "\0".join(seen).__contains__


def _kv_text(op: dict, f: str, value: Any) -> str:
    if value is None and f == "get":
        return ""  # a missing key: the same state as the empty string (docs/linearizability.md)
    if not isinstance(value, str):
        raise HistoryError(f"{_where(op)}: kv values are strings (Porcupine's key-value model), got {value!r}; "
                           f"the list-append model reads lists and other values")
    return str(value)  # numpy's str_ as a plain str


def _kv_ops(invoke: dict, completion: dict | None) -> list[SubOp]:
    return _keyed_ops(invoke, completion, _kv_text)


# --- list-append: get, put, append on lists ------------------------------------------------------
def _list_append(state: Any, value: Any) -> Any:
    # a key's value is the list of what was appended; a put scalar counts as the list's first item
    if state is None:
        return (value,)
    return state + (value,) if isinstance(state, tuple) else (state, value)


def _list_get_doomed(state: Any, seen: Any) -> bool:
    # appends only lengthen the list: a get can still fit if what it saw extends the list so far
    if seen == state:
        return False
    if not isinstance(seen, tuple):
        return True  # appends never give back a scalar or nothing
    have = () if state is None else (state if isinstance(state, tuple) else (state,))
    return len(seen) <= len(have) or seen[:len(have)] != have


def _list_put_enables(seen: Any, f: str, value: Any) -> bool:
    if value == seen:
        return True
    written = () if value is None else (value if isinstance(value, tuple) else (value,))
    return isinstance(seen, tuple) and len(seen) > len(written) and seen[:len(written)] == written


def _list_mark(f: str, arg: Any) -> Any:
    return None if f == "put" and isinstance(arg, tuple) else arg  # a put list could be a get's prefix: keep it


def _list_seen(f: str, arg: Any) -> Iterable[Any]:
    if f != "get":
        return ()
    return (arg, *arg) if isinstance(arg, tuple) else (arg,)


def _list_ops(invoke: dict, completion: dict | None) -> list[SubOp]:
    return _keyed_ops(invoke, completion, lambda op, f, value: freeze(value))


# --- the Kafka partition log: append/send -> offset, read (to the end), poll (some records) ------
def _log_append(state: tuple, value_offset: tuple) -> Any:
    value, offset = value_offset
    if offset is not None and offset != len(state):
        return INCONSISTENT
    return state + (value,)


def _log_read(state: tuple, start_records: tuple) -> Any:
    # a read returns every record from `start` to the log's end at its linearization point
    start, records = start_records
    if len(records) != len(state) - start or start > len(state):
        return INCONSISTENT
    for i, (offset, value) in enumerate(records):
        if offset != start + i or state[offset] != value:
            return INCONSISTENT
    return state


def _log_poll(state: tuple, records: tuple) -> Any:
    # a poll returns some records that exist; it need not reach the end (a consumer's fetch)
    for offset, value in records:
        if offset >= len(state) or state[offset] != value:
            return INCONSISTENT
    return state


def _log_poll_doomed(state: tuple, records: tuple) -> bool:
    return any(offset < len(state) and state[offset] != value for offset, value in records)


def _log_read_doomed(state: tuple, start_records: tuple) -> bool:
    # the log only grows: a read that already misses records, or disagrees with one, never fits
    start, records = start_records
    return (start + len(records) < len(state) or any(offset != start + i for i, (offset, _) in enumerate(records))
            or _log_poll_doomed(state, records))


def _partition_of(op: dict, record: Any = None) -> tuple:
    partition = op.get("partition")
    if isinstance(record, dict) and "partition" in record:
        partition = record["partition"]
    elif isinstance(record, (list, tuple)) and len(record) == 5:
        partition = record[0]
    if partition is None:
        raise HistoryError(f"{_where(op)}: log ops need a `partition` column (or records that name their partition)")
    return (op.get("topic"), partition)


def _offset_value(op: dict, record: Any) -> tuple:
    """A delivered record as (offset, value): [offset, value], [partition, offset, key, value, epoch] or a dict."""
    if isinstance(record, dict) and "offset" in record:
        return record["offset"], freeze(record.get("value"))
    if isinstance(record, (list, tuple)) and len(record) == 2:
        return record[0], freeze(record[1])
    if isinstance(record, (list, tuple)) and len(record) == 5:
        return record[1], freeze(record[3])
    raise HistoryError(f"{_where(op)}: a record is [offset, value], [partition, offset, key, value, leader_epoch] "
                       f"or {{offset, value}}, got {record!r}")


def _log_ops(invoke: dict, completion: dict | None) -> list[SubOp]:
    f = invoke["f"]
    if f in ("append", "send"):
        offset = None
        if completion is not None:
            offset = completion.get("offset")
            if offset is None and isinstance(completion.get("value"), int) and f == "append":
                offset = completion["value"]
        return [(_partition_of(invoke), "append", (freeze(invoke.get("value")), offset))]
    if completion is None:
        return []
    records = completion.get("value") or []
    if not isinstance(records, (list, tuple)):
        raise HistoryError(f"{_where(completion)}: a {f} returns a list of records, got {records!r}")
    by_partition: dict[tuple, list[tuple]] = {}
    for record in records:
        by_partition.setdefault(_partition_of(completion, record), []).append(_offset_value(completion, record))
    if f == "poll":
        return [(key, "poll", tuple(recs)) for key, recs in by_partition.items()]
    start = invoke.get("value")
    start = start.get("from", 0) if isinstance(start, dict) else (start or 0)
    if not by_partition:  # nothing from `start` on: the log ended there
        return [(_partition_of(invoke), "read", (start, ()))]
    return [(key, "read", (start, tuple(recs))) for key, recs in by_partition.items()]


KEYED_FS = frozenset({"get", "put", "append"})  # kv and list-append: the same ops, other values
MODELS: dict[str, Model] = {
    "cas-register": Model("cas-register", None,
                          {"read": _register_read, "write": _register_write, "cas": _register_cas}, _register_ops,
                          frozenset({"read", "write", "cas"}), frozenset({"read"}),
                          {"read": _differs}, frozenset({"write", "cas"}), _register_enables, _register_mark,
                          _register_seen),
    "kv": Model("kv", "", {"get": _register_read, "put": _register_write, "append": _kv_append}, _kv_ops,
                KEYED_FS, frozenset({"get"}),
                {"get": _kv_get_doomed}, frozenset({"put"}), _kv_put_enables, _kv_mark, _kv_seen, _kv_visible),
    "list-append": Model("list-append", None, {"get": _register_read, "put": _register_write, "append": _list_append},
                         _list_ops, KEYED_FS, frozenset({"get"}),
                         {"get": _list_get_doomed}, frozenset({"put"}), _list_put_enables, _list_mark, _list_seen),
    "kafka": Model("kafka", (), {"append": _log_append, "read": _log_read, "poll": _log_poll}, _log_ops,
                   frozenset({"append", "send", "read", "poll"}), frozenset({"read", "poll"}),
                   {"read": _log_read_doomed, "poll": _log_poll_doomed}, ignores_other_ops=True),
}
ALIASES = {"register": "cas-register", "key-value": "kv", "list": "list-append", "log": "kafka", "kafka-log": "kafka"}


def model_named(name: str) -> Model:
    model = MODELS.get(ALIASES.get(name, name))
    if model is None:
        raise ValueError(f"unknown model {name!r}: choose one of {', '.join(sorted(MODELS))}")
    return model
