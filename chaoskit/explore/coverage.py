"""Coverage of protocol states: what a run reached, read from what its parts logged.

A search keeps a schedule when its run reached something no run before it had (Mallory's idea:
the system's own events, abstracted, not code coverage). The abstraction lives here, in one place,
and docs/explore.md lists it. A run's folder gives two streams, put on one time line:

- the history (history.jsonl): the faults' start ops and what they resolved, the clients' sends
  and polls and their errors, rebalance and key callbacks, the ordered consumer's gate events
  (`gate-waiting`, `gate-opened` with the rule that opened it), truncations it detected, the
  coordinators it found and the requests a leader refused for their epoch;
- the node logs (controller-N.log, broker-N.log): elections (clean, unclean, offline), ISR
  changes and why, expansions, deletion marks, epoch bumps and removals, truncations, fetches
  fenced or diverged, ZooKeeper sessions lost, coordinators moving, group rebalances.

Each event gets a label (`election:unclean`, `gate:expansion:peer`, `mode:RO`); the features of a
run are the labels with a bucketed count (`election:clean#2`), each partition's mode sequence
(`modes:RW>RO>None`), what the consumers were doing at each election of a partition they read
(`at-election:unclean:lagging`), a gate waiting while the group's coordinator moved, the pairs of
faults open at once (`with:kill+latency`) and the pairs of consecutive events (`then:a>b`), which
make a new order of the same events count. The verdict adds each check's evidence counts
(bucketed) and the anomalies it found; the topic's settings add themselves and each kind of step
taken under them (`under:min.insync.replicas=2:fault:kill:coordinator`).
"""
from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from chaoskit.explore.files import read_json, read_lines
from chaoskit.protocol.topics import OFFSETS_TOPIC

LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) \w+ ([\w.]+): (.*)$")
ERROR_CODE = re.compile(r"\b([A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+)\b")
RECENT_S = 1.0  # a consumer that delivered from a partition this recently was reading it
RESTARTED_S = 3.0  # one whose consumers closed this recently had restarted

# (pattern on a controller or broker log message, label; groups named topic and partition when
# the event is a partition's). Order matters: the first that matches labels the line.
CONTROLLER_EVENTS: list[tuple[re.Pattern[str], str]] = [(re.compile(p), label) for p, label in [
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): leader (?P<old>-?\d+) -> -1 at epoch", "election:offline"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): leader (?P<old>-?\d+) -> (?P<new>\d+) at epoch .*\(UNCLEAN\)",
     "election:unclean"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): leader (?P<old>-?\d+) -> (?P<new>\d+) at epoch", "election:clean"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): isr .* -> ", "epoch-bump:isr"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+) created:", "mode:RW"),
    (r"^(?P<topic>[\w.-]+): expansion created partitions \[(?P<partitions>[\d, ]+)\]", "mode:RW"),
    (r"^(?P<topic>[\w.-]+): partitions \[(?P<partitions>[\d, ]+)\] marked for deletion", "mode:RO"),
    (r"^(?P<topic>[\w.-]+): leader epochs of .* bumped", "epoch-bump:count"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): mode None", "mode:None"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): removed", "mode:gone"),
    (r"partitions .* refused: expanding an internal", "guardrail:refused"),
    (r"won the election", "controller:elected"),
    (r"resigning|no longer the controller|standing by$", "controller:resigned"),
    (r"^brokers: died \[\d", "broker:died"),
    (r"\(bounced \[\d", "broker:bounced"),
    (r"seen a newer controller epoch", "controller:stale-refused"),
    (r"ZooKeeper session lost", "zk:session-lost"),
]]
BROKER_EVENTS: list[tuple[re.Pattern[str], str]] = [(re.compile(p), label) for p, label in [
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): ISR .*\(adding caught-up", "isr:expand"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): ISR .*\(dropping lagging", "isr:shrink"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): cannot change the ISR", "isr:refused"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): truncating from", "log:truncated"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): a fetch at .* diverges", "fetch:diverged"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): .* answered (?P<code>[A-Z_]+); retrying", "fetcher:answered"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): our log end .* below the leader's log start", "fetch:below-log-start"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): no longer leading", "leader:resigned"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): ignoring leader epoch", "leader-and-isr:stale"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): compacted below", "log:compacted"),
    (r"^(?P<topic>[\w.-]+)-(?P<partition>\d+): retention", "log:retention"),
    (r"^__consumer_offsets-\d+: resigned", "coordinator:moved"),
    (r"^__consumer_offsets-\d+: loaded [1-9]", "coordinator:loaded"),
    (r"preparing rebalance", "group:rebalance"),
    (r"session expired", "group:member-expired"),
    (r"ZooKeeper session lost", "zk:session-lost"),
    (r"registered /brokers/ids", "zk:registered"),
    (r"refused: epoch \d+ has been seen", "control:stale-controller"),
]]


@dataclass(frozen=True)
class Event:
    t: float  # seconds from the history's start
    label: str
    topic: str | None = None
    partition: int | None = None
    process: Any = None
    value: Any = None  # an election's (old leader, new leader); a fault's resolved state


@dataclass(frozen=True)
class RunCoverage:
    features: frozenset[str]
    events: tuple[Event, ...]

    def to_json(self) -> dict[str, Any]:
        return {"features": sorted(self.features)}


def bucket(n: int) -> str:
    """AFL's hit-count buckets: a count that moves to another bucket is something new."""
    for top, name in ((1, "1"), (2, "2"), (3, "3"), (7, "4-7"), (15, "8-15"), (31, "16-31"), (127, "32-127")):
        if n <= top:
            return name
    return "128+"


# --- reading a run -------------------------------------------------------------------------------------
def of_run(run_dir: Path) -> RunCoverage:
    """The coverage of the run whose folder is `run_dir` (history.jsonl, node logs, results.json)."""
    run_dir = Path(run_dir)
    results = read_json(run_dir / "results.json")
    test = read_json(run_dir / "test.json")
    topics = {t["name"] for t in test.get("topics", [])}
    ops = list(read_lines(run_dir / "history.jsonl"))
    anchor = (results.get("stats") or {}).get("history_wall")
    events = history_events(ops, topics)
    if anchor is not None:
        for log in sorted(run_dir.glob("*.log")):
            table = CONTROLLER_EVENTS if log.name.startswith("controller-") else \
                BROKER_EVENTS if log.name.startswith("broker-") else None
            if table is not None:
                events += log_events(log.read_text(errors="replace").splitlines(), table, float(anchor), topics)
    events.sort(key=lambda e: e.t)
    features = features_of(events, ops, topics) | verdict_features(results.get("verdict") or {})
    features |= setting_features(test, events)
    return RunCoverage(frozenset(features), tuple(events))


def setting_features(test: dict[str, Any], events: list[Event]) -> set[str]:
    """The run's topic settings (what a topic promises: KIP-253 on or off, the ISR a write needs,
    unclean elections, compaction) as states of their own, and each kind of step under each: a
    schedule that reached a setting is kept, and its edits try the steps that matter there."""
    settings = {f"{k}={v}" for t in test.get("topics", []) for k, v in (t.get("config") or {}).items()}
    steps = {e.label.split("#")[0] for e in events if e.label.startswith("fault:")}
    return {f"setting:{s}" for s in settings} | {f"under:{s}:{step}" for s in settings for step in steps}


def log_events(lines: Iterable[str], table: list[tuple[re.Pattern[str], str]], anchor: float,
               topics: set[str]) -> list[Event]:
    """The labelled events of a node log's lines (wall-clock times made relative to `anchor`),
    those of a partition only for the run's topics (and the coordinators' topic)."""
    out = []
    for line in lines:
        m = LOG_LINE.match(line)
        if not m:
            continue
        message = m[4]
        for pattern, label in table:
            hit = pattern.search(message)
            if hit is None:
                continue
            fields = hit.groupdict()
            topic = fields.get("topic")
            if topic is not None and topic not in topics and topic != OFFSETS_TOPIC:
                break
            if fields.get("code"):
                label = f"{label}:{fields['code']}"
            when = round(time.mktime(time.strptime(m[1], "%Y-%m-%d %H:%M:%S")) + int(m[2]) / 1000 - anchor, 3)
            if fields.get("partitions"):  # a line about several partitions: an event for each
                out += [Event(when, label, topic, int(p)) for p in fields["partitions"].split(",")]
            else:
                leaders = (int(fields["old"]), int(fields.get("new") or -1)) if fields.get("old") else None
                out.append(Event(when, label, topic, int(fields["partition"]) if fields.get("partition") else None,
                                 value=leaders))
            break
    return out


def history_events(ops: list[dict[str, Any]], topics: set[str]) -> list[Event]:
    """The labelled events of a history: faults, client errors, callbacks, gates, truncations."""
    out = []
    for op in ops:
        t = op.get("time_ns", 0) / 1e9
        f, kind, value = op.get("f"), op.get("type"), op.get("value")
        if op.get("process") == "nemesis" and f == "start":
            out.append(Event(t, fault_label(value or {}, op.get("error")), process="nemesis",
                             value=(value or {}).get("resolved")))
        elif f in ("gate-waiting", "gate-opened") and isinstance(value, dict):
            rule = f":{value['rule']}" if value.get("rule") else ""
            out.append(Event(t, f"{f}:{value.get('gate')}{rule}", op.get("topic"), op.get("partition"),
                             op.get("process")))
        elif f == "truncation-detected":
            out.append(Event(t, f"truncation:detected:{kind}", op.get("topic"), op.get("partition"), op.get("process")))
        elif f == "epoch-refused" and isinstance(value, dict):
            out.append(Event(t, f"epoch-refused:{value.get('request')}:{value.get('error')}", op.get("topic"),
                             op.get("partition"), op.get("process")))
        elif f == "coordinator" and isinstance(value, dict):
            out.append(Event(t, "client:coordinator", process=op.get("process"), partition=value.get("node")))
        elif f in ("send", "poll") and kind in ("fail", "info") and op.get("error"):
            code = ERROR_CODE.search(str(op["error"]))
            out.append(Event(t, f"{f}:{kind}:{code[1] if code else str(op['error']).split(':')[0]}",
                             op.get("topic"), op.get("partition"), op.get("process")))
        elif f in ("on_partition_key_maybe_revoked", "on_partition_key_assigned", "on_partitions_revoked"):
            out.append(Event(t, f"callback:{f.removeprefix('on_')}", process=op.get("process")))
    return out


def fault_label(value: dict[str, Any], error: Any) -> str:
    """A fault start as a label: the fault, what kind of it (an admin op, a story, a client
    action) and whether it failed."""
    name, params = value.get("fault", "?"), value.get("params") or {}
    if name == "admin":
        how = "immediate" if params.get("immediate") else "delay" if "delay_ms" in params else \
            "regrow" if "removed_within_s" in params else "drained" if params.get("op") == "shrink" else ""
        name = f"admin:{params.get('op')}" + (f":{how}" if how else "")
    elif name == "unclean-election":
        name = f"unclean-election:{params.get('consumers') or 'plain'}"
    elif name == "clients":
        name = f"clients:{params.get('action')}"
    elif name in ("kill", "pause", "restart", "partition", "zombie"):  # which node, by kind
        target = str(value.get("target", "?")).split(":")[0]
        name = f"{name}:{target}"
    return f"fault:{name}" + (":failed" if error else "")


# --- the features ------------------------------------------------------------------------------------
def features_of(events: list[Event], ops: list[dict[str, Any]], topics: set[str]) -> set[str]:
    counts = Counter(e.label for e in events)
    features = {f"{label}#{bucket(n)}" for label, n in counts.items()}
    features |= mode_sequences(events)
    features |= states_at_elections(events, ops, topics)
    features |= gate_waits_across_moves(events)
    features |= overlaps(ops)
    coarse = [e.label.split(":")[0] + ":" + e.label.split(":")[1] if ":" in e.label else e.label
              for e in events if not e.label.startswith(("send:", "poll:", "callback:", "client:"))]
    features |= {f"then:{a}>{b}" for a, b in zip(coarse, coarse[1:]) if a != b}
    return features


def mode_sequences(events: list[Event]) -> set[str]:
    """Each partition's KIP-694 mode history, as the controller logged it."""
    seqs: dict[tuple[str, int], list[str]] = defaultdict(list)
    for e in events:
        if e.label.startswith("mode:") and e.partition is not None and e.topic != OFFSETS_TOPIC:
            seq = seqs[(e.topic, e.partition)]
            mode = e.label.split(":")[1]
            if not seq or seq[-1] != mode:
                seq.append(mode)
    return {"modes:" + ">".join(seq) for seq in seqs.values()}


def states_at_elections(events: list[Event], ops: list[dict[str, Any]], topics: set[str]) -> set[str]:
    """What the consumers of a partition were doing when its leader changed: reading (one delivered
    from it within the last second), idle (held by a fault, or nothing left to read), restarted
    (their consumers closed in the last seconds) or lagging (behind what was acknowledged)."""
    deliveries: dict[tuple[str, int], list[tuple[float, int]]] = defaultdict(list)
    acked: dict[tuple[str, int], list[tuple[float, int]]] = defaultdict(list)
    for op in ops:
        if op.get("type") != "ok":
            continue
        t = op.get("time_ns", 0) / 1e9
        if op.get("f") == "poll":
            for r in op.get("value") or ():
                deliveries[(op.get("topic"), r[0])].append((t, r[1]))
        elif op.get("f") == "send" and op.get("offset") is not None:
            acked[(op.get("topic"), op.get("partition"))].append((t, op["offset"]))
    held = [(e.t, e.label) for e in events if e.label.startswith(("fault:clients:", "fault:unclean-election:"))]
    out = set()
    for e in events:
        if not e.label.startswith("election:") or e.topic not in topics or e.partition is None:
            continue
        key = (e.topic, e.partition)
        state = _consumer_state(e.t, deliveries[key], acked[key], held)
        out.add(f"at-election:{e.label.split(':')[1]}:{state}")
    return out


def _consumer_state(t: float, delivered: list[tuple[float, int]], acked: list[tuple[float, int]],
                    held: list[tuple[float, str]]) -> str:
    if any(t - RESTARTED_S <= h <= t and ("restart" in label or "leave" in label) for h, label in held):
        return "restarted"
    if any(t - RESTARTED_S <= h <= t and ("idle" in label or "reading" in label or "lagging" in label)
           for h, label in held):
        return "held"
    before = [o for when, o in delivered if when <= t]
    if any(t - RECENT_S <= when <= t for when, _ in delivered):
        return "reading"
    written = [o for when, o in acked if when <= t]
    if written and (not before or max(before) < max(written)):
        return "lagging"
    return "idle"


def gate_waits_across_moves(events: list[Event]) -> set[str]:
    """A KIP-253 gate still waiting when the group's coordinator moved (its positions, kept in the
    coordinator's memory, are then lost: the waiting member must be told them again)."""
    waiting: dict[tuple[Any, str], str] = {}
    out = set()
    for e in events:
        if e.label.startswith("gate-waiting:"):
            waiting[(e.process, f"{e.topic}-{e.partition}")] = e.label.split(":")[1]
        elif e.label.startswith("gate-opened:"):
            waiting.pop((e.process, f"{e.topic}-{e.partition}"), None)
        elif e.label in ("coordinator:moved", "client:coordinator") and waiting:
            out |= {f"gate-wait:{gate}:coordinator-moved" for gate in waiting.values()}
    return out


def overlaps(ops: list[dict[str, Any]]) -> set[str]:
    """Pairs of faults whose windows were open at once."""
    open_: dict[Any, str] = {}
    out = set()
    for op in ops:
        if op.get("process") != "nemesis" or not isinstance(op.get("value"), dict):
            continue
        value = op["value"]
        key, name = value.get("window"), str(value.get("fault"))
        if op.get("f") == "start":
            out |= {f"with:{'+'.join(sorted((name, other)))}" for other in open_.values() if other != name}
            open_[key] = name
        elif op.get("f") == "stop":
            open_.pop(key, None)
    return out


def verdict_features(verdict: dict[str, Any]) -> set[str]:
    """Each check's evidence counts, bucketed, and the anomalies found."""
    out = set()
    for name, result in (verdict.get("results") or {}).items():
        for counter, n in (result.get("counts") or {}).items():
            if counter != "anomalies" and isinstance(n, int) and n > 0:
                out.add(f"evidence:{name}:{counter}#{bucket(n)}")
        if result.get("valid") is False:
            out.add(f"anomaly:{name}")
    return out
