"""`check(ops, model)`: the "linearizable" check over a whole history.

The history is split into independent sub-histories (per key or partition), each searched with
its own time budget, in-process or on Spark. A sub-history that is not linearizable gives a
witness: the longest linearizable order found and the op that cannot be placed after it. One
that runs out of budget is "unknown", and so is the whole check unless another is invalid.
"""
from __future__ import annotations

from typing import Any, Hashable, Iterable

from chaoskit.checkers.linear.models import model_named
from chaoskit.checkers.linear.search import SearchResult, search
from chaoskit.checkers.linear.subhistory import Operation, split
from chaoskit.checkers.result import MAX_WITNESSES, CheckResult, merge_valid

CHECK_NAME = "linearizable"
READS = {"read", "get", "poll"}


def check(ops: Iterable[dict], model: str, spark: Any = None, budget_s: float = 30.0) -> CheckResult:
    """Is the history linearizable under `model` ("cas-register", "kv", "list-append" or "kafka")?

    `spark`, a SparkSession, searches the sub-histories in parallel; `budget_s` bounds each
    sub-history's search (past it that sub-history is "unknown")."""
    if not budget_s > 0:
        raise ValueError(f"budget_s is the seconds each sub-history may search, a positive number; got {budget_s!r}")
    spec = model_named(model)
    subs = split(ops, spec)
    if spark is None:
        results = {key: search(sub, spec, budget_s) for key, sub in subs.items()}
    else:
        from chaoskit.checkers.linear.spark_run import search_on_spark  # Spark only when asked for
        results = search_on_spark(spark, subs, spec.name, budget_s)
    return summarize(spec.name, subs, results)


def summarize(model: str, subs: dict[Hashable, list[Operation]], results: dict[Hashable, SearchResult]) -> CheckResult:
    keys = sorted(results, key=repr)
    invalid = [k for k in keys if results[k].valid is False]
    unknown = [k for k in keys if results[k].valid == "unknown"]
    counts = {
        "ops": sum(len(sub) for sub in subs.values()),
        "indeterminate": sum(1 for sub in subs.values() for op in sub if op.ret is None),
        "sub-histories": len(subs),
        "invalid": len(invalid),
        "unknown": len(unknown),
    }
    details: dict[str, Any] = {
        "model": model,
        "steps": sum(r.steps for r in results.values()),
        "search_s": round(sum(r.elapsed_s for r in results.values()), 3),
    }
    if unknown:
        details["unknown"] = [{"key": jsonable(k), "error": results[k].error} for k in unknown[:MAX_WITNESSES]]
    error = None
    if not subs:
        error = f"no {model} ops in this history, so nothing was checked"
    elif unknown and not invalid:
        error = f"{len(unknown)} of {len(subs)} sub-histories undecided: {results[unknown[0]].error}"
    return CheckResult(CHECK_NAME, merge_valid([r.valid for r in results.values()]),
                       counts, [witness(model, k, results[k]) for k in invalid[:MAX_WITNESSES]], error, details)


def witness(model: str, key: Hashable, result: SearchResult) -> dict[str, Any]:
    op = result.failed
    assert op is not None
    where = "" if key is None else f" on {describe_key(model, key)}"
    explanation = (f"op {op.index} (process {op.process!r}, {describe(model, op)}){where} cannot be linearized: after "
                   f"the longest linearizable order found ({len(result.prefix)} ops, state {short(result.state)}) no "
                   f"order of the ops concurrent with it lets it take effect before it returned")
    return {"explanation": explanation, "key": jsonable(key), "op": op.index, "completion": op.completion_index,
            "prefix": result.prefix, "state": jsonable(result.state)}


def describe(model: str, op: Operation) -> str:
    if model == "kafka" and op.f == "read":
        start, records = op.arg
        return f"read from offset {start} returned {short(records)}"
    if op.f in READS:
        return f"{op.f} returned {short(op.arg)}"
    if op.f == "cas":
        return f"cas {short(op.arg[0])} -> {short(op.arg[1])}"
    if model == "kafka" and op.f == "append":
        value, offset = op.arg
        return f"append {short(value)}" + ("" if offset is None else f" acknowledged at offset {offset}")
    return f"{op.f} {short(op.arg)}"


def describe_key(model: str, key: Hashable) -> str:
    if model == "kafka":
        topic, partition = key
        return f"partition {partition}" if topic is None else f"partition {topic}-{partition}"
    return f"key {short(key)}"


def short(value: Any, limit: int = 80) -> str:
    text = repr(jsonable(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    return value
