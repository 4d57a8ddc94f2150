"""Judging each topic of a run by what its config promises (topic config `enable.ordered.delivery`).

The checks have no per-topic notion: `key-order` judges every topic of a history. A run whose
workload gives each topic its own processes (keyed-sequences with `topics`) is cut into one history
per topic (with the nemesis's ops, and the admin's for that topic), and each is checked alone: a topic with ordered delivery on
by every check, one with it off by every check but `key-order` (KIP-253 promises no per-key order
across its expansion there). `routing` reads from the sends which rule placed each key, so a case
also shows the client honouring each topic's setting.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from chaoskit.checkers.compose import run_checks
from chaoskit.client.linear_hash import linear_partition, modulo_partition
from chaoskit.history.reader import History
from chaoskit.run.chaostest import RunResult

ORDER_CHECK = "key-order"


CLIENT_OPS = ("send", "poll")  # what the workload's own processes do (the admin and nemesis do neither)


def processes_of(history: History, topic: str) -> set[Any]:
    """The client processes that sent to or polled `topic`; ValueError when one also worked on another."""
    mine, others = set(), set()
    for op in history.ops:
        if op.get("f") in CLIENT_OPS:
            (mine if op.get("topic") == topic else others).add(op.get("process"))
    both = mine & others
    if both:
        raise ValueError(f"processes {sorted(both, key=str)} worked on {topic!r} and other topics: the history "
                         "cannot be cut per topic (give each topic its own processes)")
    return mine


def topic_history(history: History, topic: str) -> History:
    """The ops of `topic`'s client processes, and the others' (nemesis, admin) that name no other topic."""
    clients = {op.get("process") for op in history.ops if op.get("f") in CLIENT_OPS}
    mine = processes_of(history, topic)

    def kept(op: dict[str, Any]) -> bool:
        process = op.get("process")
        return process in mine if process in clients else op.get("topic") in (None, topic)
    return History([dict(op) for op in history.ops if kept(op)], history.problems)


def topic_result(result: RunResult, topic: str, ordered_delivery: bool = True) -> RunResult:
    """The run as if `topic` were all it did: its cut history checked alone by the run's checks,
    without key-order's result when the topic has ordered delivery off."""
    cut = topic_history(History.from_path(result.history), topic)
    verdict = run_checks(cut, result.test.checks, engine="local")
    if not ordered_delivery:
        verdict = replace(verdict, results={n: r for n, r in verdict.results.items() if n != ORDER_CHECK},
                          required=[n for n in verdict.required or () if n != ORDER_CHECK] or None)
    return replace(result, verdict=verdict, stats={**result.stats, "topic": topic})


def routing(history: History | str, topic: str, counts: Iterable[int], initial: int) -> dict[str, int]:
    """How the acknowledged keyed sends of `topic` were placed, with the partition counts it had:
    `linear` / `stock` explained by linear hashing / murmur2 modulo at some count, `linear_only` /
    `stock_only` by that rule and not the other, `neither` by no rule (a client breaking both)."""
    ops = history.ops if isinstance(history, History) else History.from_path(history).ops
    counts = sorted(counts)
    out = dict.fromkeys(("sends", "linear", "stock", "linear_only", "stock_only", "neither"), 0)
    for op in ops:
        if op.get("f") != "send" or op.get("type") != "ok" or op.get("topic") != topic or not op.get("key"):
            continue
        key = str(op["key"]).encode()
        linear = op["partition"] in {linear_partition(key, initial, n) for n in counts}
        stock = op["partition"] in {modulo_partition(key, n) for n in counts}
        out["sends"] += 1
        out["linear"] += linear
        out["stock"] += stock
        out["linear_only"] += linear and not stock
        out["stock_only"] += stock and not linear
        out["neither"] += not linear and not stock
    return out
