"""One checker path: checks by name from the plugin registry, composed into a Verdict.

    run_checks(History.from_path(p))                       # every applicable Kafka check (auto engine)
    run_checks(h, ["key-order", "lost-write"], engine="local")
    run_checks(h, ["linearizable"], model="cas-register")

Every check is a Checker (chaoskit.roles) made by a factory registered through the plugin manager,
the built-ins (plugins/checks) exactly as a third party's: called with the settings as keywords
(`engine`, `spark_master`, `model`, `budget_s`). `compose` runs them as Jepsen's checker/compose
does, into `{name: result}` with one overall verdict; the Kafka checks that share an engine are
evaluated together over one build of its tables. A check that raises is "unknown" with the error;
the others still run.

    run_checks(h, unordered_topics={"audit"})              # key-order promised on every topic but "audit"

`unordered_topics` are topics whose config `enable.ordered.delivery` is false: KIP-253 promises no
per-key order there, so the order checks (`ORDER_CHECKS`) judge the history without their ops (a
poll op reads one topic); every other check judges the whole history.

    run_checks(h, compacted_topics={"orders"})             # compaction may drop superseded records there

`compacted_topics` are topics with `cleanup.policy` compact: Kafka keeps only a key's last record
there, so a record a later acknowledged record of its key and partition superseded may be gone by
design before any consumer reads it. The checks that judge what was read (`READ_CHECKS`) judge the
history without such superseded sends; every other check (a producer's offsets, two values at an
offset) judges them all.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Mapping

from chaoskit.checkers.catalog import JEPSEN_CHECKS, KAFKA_CHECKS, MODELS, Check
from chaoskit.checkers.engine import ENGINES, chosen_engine
from chaoskit.checkers.kafka import KafkaCheck, run_kafka_checks
from chaoskit.checkers.result import CheckResult
from chaoskit.checkers.situate import situate
from chaoskit.checkers.verdict import Verdict
from chaoskit.history.reader import History, as_history
from chaoskit.history.schema import json_text
from chaoskit.roles import Checker, LiveRun


def applicable(history: History) -> list[Check]:
    """The Kafka checks whose op kinds the history holds, but those run only when named (`by_name`);
    Jepsen's own (JEPSEN_CHECKS) only on a history read from Jepsen's Kafka workload."""
    from chaoskit.history.jepsen_kafka import jepsen_fs

    present = history.kinds()
    jepsen = JEPSEN_CHECKS if jepsen_fs(history) else ()
    return [c for c in (*KAFKA_CHECKS, *jepsen) if not c.missing(present) and not c.by_name]


def default_checks(history: History, model: str | None) -> list[str]:
    """What runs when no check is named: linearizability under a register, kv or list-append model,
    else every applicable Kafka check."""
    if model in ("cas-register", "kv", "list-append"):
        return ["linearizable"]
    return [c.name for c in applicable(history)]


def _factories(names: list[str]) -> dict[str, Any]:
    from chaoskit.pluginmanager import lookup_all

    try:
        return lookup_all("checks", names)
    except ValueError as e:
        raise ValueError(str(e).replace("; installed:", "; the checks are")) from None


def checkers(names: list[str], **settings: Any) -> dict[str, Checker]:
    """The registered checks `names`, each built with `settings`; ValueError naming unknown ones."""
    return {name: factory(**settings) for name, factory in _factories(names).items()}


ORDER_CHECKS = frozenset({"key-order"})  # what a topic without ordered delivery is not promised
# what only a drain that finished can show: a write nobody read yet is unseen only once the consumers
# read to the end; on a run's history that stops before its drain's end (History.unfinished) it is unknown
NEEDS_DRAIN = frozenset({"unseen"})
# what a compacted topic is not promised for a record a later one of its key superseded: that it is read
READ_CHECKS = frozenset({"lost-write", "unseen", "poll-skip"})


def without_superseded(history: History, topics: set[str]) -> History:
    """The history less the sends (invocation and completion) to one of the compacted `topics` whose
    key a later acknowledged send to the same partition wrote again: compaction may remove them."""
    last: dict[tuple[Any, Any, Any], int] = {}
    for op in history.ops:
        if _keyed_ack(op, topics):
            where = (op["topic"], op.get("partition"), op["key"])
            last[where] = max(last.get(where, -1), int(op["offset"]))
    gone = {(op.get("process"), json_text(op.get("value"))) for op in history.ops if _keyed_ack(op, topics)
            and int(op["offset"]) < last[(op["topic"], op.get("partition"), op["key"])]}
    if not gone:
        return history
    return History([op for op in history.ops if not (op.get("f") == "send" and op.get("topic") in topics
                                                     and (op.get("process"), json_text(op.get("value"))) in gone)],
                   history.problems)


def _keyed_ack(op: Any, topics: set[str]) -> bool:
    return (op.get("f") == "send" and op.get("type") == "ok" and op.get("topic") in topics
            and op.get("key") is not None and op.get("offset") is not None)


def without_topics(history: History, topics: set[str]) -> History:
    """The history less the ops naming one of `topics` (sends, polls, admin steps on them)."""
    return History([op for op in history.ops if op.get("topic") not in topics], history.problems)


def run_checks(history: Any, checks: list[str] | None = None, engine: str = "auto", master: str | None = None,
               model: str | None = None, budget_s: float = 60.0, test: LiveRun | None = None,
               unordered_topics: Iterable[str] = (), compacted_topics: Iterable[str] = ()) -> Verdict:
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: use one of {', '.join(ENGINES)}")
    if model is not None and model not in MODELS:
        raise ValueError(f"model {model!r}: use one of {', '.join(MODELS)}")
    history = as_history(history)
    engine = chosen_engine(engine, master, len(history))
    names = list(checks) if checks is not None else default_checks(history, model)
    chosen = checkers(names, engine=engine, spark_master=master, model=model, budget_s=budget_s)
    unordered, compacted = set(unordered_topics), set(compacted_topics)
    apart = {n: chosen.pop(n) for n in list(chosen) if n in ORDER_CHECKS} if unordered else {}
    reads = {n: chosen.pop(n) for n in list(chosen) if n in READ_CHECKS} if compacted else {}
    required = list(checks) if checks is not None else None
    verdict = compose(chosen, test, history, required=required)
    for part, view in ((apart, lambda: without_topics(history, unordered)),
                       (reads, lambda: without_superseded(history, compacted))):
        if part:
            verdict.results.update(compose(part, test, view()).results)
    if apart or reads:
        verdict.results = {n: verdict.results[n] for n in names}
    verdict.engine = engine
    return verdict


def check_names(names: list[str]) -> None:
    """Raise ValueError (listing the checks) unless every name is a registered check."""
    _factories(names)


def compose(named: Mapping[str, Checker], test: LiveRun | None, history: History,
            required: list[str] | None = None) -> Verdict:
    """Every checker's result by name, and the history's unreadable lines beside them; `required`:
    the checks asked for by name, which must judge something (the rest count only if they did)."""
    results: dict[str, CheckResult] = {}
    batches: dict[Any, dict[str, KafkaCheck]] = {}
    for name, checker in named.items():
        if isinstance(checker, KafkaCheck):  # one pass over the tables per engine
            batches.setdefault(checker.engine, {})[name] = checker
        else:
            results[name] = _guarded(name, checker, test, history)
    for engine, batch in batches.items():
        found = run_kafka_checks(engine, [c.spec for c in batch.values()], history)
        results.update({name: found[c.name] for name, c in batch.items()})
    situate(results, history)  # each witness's ops in time, and the faults then
    judged = [name for name in NEEDS_DRAIN & set(results) if results[name].judged]
    unfinished = history.unfinished() if judged else None
    for name in judged if unfinished else ():  # what a drain never read is not lost: nothing said it would be read
        results[name] = CheckResult(name, "unknown", results[name].counts, error=unfinished)
    return Verdict({name: results[name] for name in named}, history.problems, required)


def _guarded(name: str, checker: Checker, test: LiveRun | None, history: History) -> CheckResult:
    try:
        found = checker.check(test, history)
        if not isinstance(found, CheckResult):
            raise TypeError(f"check {name!r} returned {type(found).__name__}, not a CheckResult")
        return found
    except Exception as e:  # noqa: BLE001 -- a check that raises is unknown, never a crash
        return CheckResult.unknown(name, e)


__all__ = ["run_checks", "compose", "checkers", "applicable", "check_names", "ENGINES"]
