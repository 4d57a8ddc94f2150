"""Dependency cycles among a transactional history's Jepsen ops, as Elle finds them for Jepsen's
Kafka checker (G0, G1c and their -realtime forms); both engines build the edges, this module
searches them.

Vertices are completed Jepsen ops (a `:send`, `:poll` or `:txn` completion, any outcome). Edges:
- ww: per key (topic-partition), the writer of a value to the writer of the value after it in the
  key's version order;
- wr: the writer of a value to each other op that read it (a failed poll's reads included, as Jepsen
  counts them);
- rt: real time, from an op that completed ok to each op invoked after that completion, reduced as
  Elle reduces it (an op's predecessors are the ok completions before its invocation that no other
  such completion follows).
Jepsen's Kafka checker builds no anti-dependency (rw) edges and no process order, so neither is
here, and G-single, G2 and the -process forms cannot arise.

A cycle of ww edges is G0, of wr edges G1c; one that needs a real-time edge as well is the
`-realtime` form. Jepsen always allows G0 (Kafka does not isolate writes), and builds no ww edges by
default, so G1c is judged on wr edges only; the G0 checks count what they find as `allowed`. For each kind the search takes the
strongly connected components of the graph restricted to that kind's edges, and in each component
the shortest cycle holding every edge kind the anomaly needs (a breadth-first search from each such
edge's head back to its tail). One witness per component and kind, with each step explained.
The graph is built only over the ops a cycle can pass through (`suspects`): on a history whose ops
mostly complete in the order their dependencies run, few.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

WW, WR, RT = "ww", "wr", "rt"
# anomaly -> (edge kinds it may use, edge kinds a cycle of it must hold). G1c is judged on wr edges
# alone, as Jepsen's Kafka checker builds its graph by default (no ww edges without `:ww-deps`, and with
# them it allows G1c): a cycle that needs a ww edge is G0's, which Jepsen always allows (ALLOWED)
KINDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "G0": (frozenset({WW}), frozenset({WW})),
    "G1c": (frozenset({WR}), frozenset({WR})),
    "G0-realtime": (frozenset({WW, RT}), frozenset({WW, RT})),
    "G1c-realtime": (frozenset({WR, RT}), frozenset({WR, RT})),
}
ALLOWED = frozenset({"G0", "G0-realtime"})  # Kafka does not isolate writes: Jepsen reports, never fails, these
MAX_STARTS = 64  # edges tried as a cycle's start per component: the shortest of them is the witness


@dataclass(frozen=True)
class Edge:
    src: Any
    dst: Any
    kind: str  # ww, wr or rt
    why: str  # what makes it, in words ("" for a real-time edge: worded from its ends when shown)


@dataclass
class Graph:
    """Labelled edges between ops; at most one edge of each kind per ordered pair."""

    edges: dict[tuple[Any, Any, str], Edge] = field(default_factory=dict)

    def add(self, src: Any, dst: Any, kind: str, why: str) -> None:
        if src != dst:
            self.edges.setdefault((src, dst, kind), Edge(src, dst, kind, why))

    def restricted(self, kinds: frozenset[str], within: set[Any] | None = None) -> dict[Any, list[Edge]]:
        """The edges of `kinds` (between vertices of `within`, when given) as successor lists."""
        out: dict[Any, list[Edge]] = {}
        for e in self.edges.values():
            if e.kind in kinds and (within is None or (e.src in within and e.dst in within)):
                out.setdefault(e.src, []).append(e)
                out.setdefault(e.dst, [])
        for succ in out.values():
            succ.sort(key=lambda e: (str(e.dst), e.kind))
        return out


def components(succ: dict[Any, list[Edge]]) -> list[list[Any]]:
    """Strongly connected components of more than one vertex (Tarjan's, without recursion)."""
    index: dict[Any, int] = {}
    low: dict[Any, int] = {}
    on_stack: set[Any] = set()
    stack: list[Any] = []
    out: list[list[Any]] = []
    counter = 0
    for root in sorted(succ, key=str):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            edges = succ.get(v, [])
            if i < len(edges):
                work.append((v, i + 1))
                w = edges[i].dst
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            for e in edges:  # children done: take their lows
                if e.dst in on_stack:
                    low[v] = min(low[v], low[e.dst])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def _path(succ: dict[Any, list[Edge]], within: set[Any], start: Any, goal: Any, need: frozenset[str],
          have: frozenset[str]) -> list[Edge] | None:
    """The shortest path start -> goal inside `within` that, with the kinds already `have`, holds every
    kind in `need` (breadth-first over (vertex, kinds held))."""
    first = (start, have & need)
    seen = {first}
    back: dict[tuple[Any, frozenset[str]], tuple[tuple[Any, frozenset[str]], Edge]] = {}
    queue = deque([first])
    while queue:
        state = queue.popleft()
        v, held = state
        if v == goal and held == need:
            path = []
            while state != first:
                state, e = back[state]
                path.append(e)
            return path[::-1]
        for e in succ.get(v, []):
            if e.dst not in within:
                continue
            nxt = (e.dst, held | ({e.kind} & need))
            if nxt not in seen:
                seen.add(nxt)
                back[nxt] = (state, e)
                queue.append(nxt)
    return None


def find(graph: Graph) -> dict[str, list[list[Edge]]]:
    """{anomaly: cycles}, each cycle its edges in order (the last one's dst is the first one's src)."""
    found: dict[str, list[list[Edge]]] = {}
    # a cycle of any kind lies inside one strongly connected component of the graph of every edge:
    # the searches need look only at those components' vertices (on a clean history, none)
    suspects = {v for comp in components(graph.restricted(frozenset({WW, WR, RT}))) for v in comp}
    for name, (kinds, need) in KINDS.items():
        succ = graph.restricted(kinds, suspects)
        cycles = []
        for comp in components(succ):
            within = set(comp)
            best: list[Edge] | None = None
            starts = [e for v in sorted(comp, key=str) for e in succ[v] if e.dst in within and e.kind in need]
            for e in starts[:MAX_STARTS]:
                rest = _path(succ, within, e.dst, e.src, need, frozenset({e.kind}))
                if rest is not None and (best is None or len(rest) + 1 < len(best)):
                    best = [e, *rest]
            if best is not None:
                cycles.append(best)
        if cycles:
            found[name] = sorted(cycles, key=lambda c: (len(c), [str(e.src) for e in c]))
    return found


# --- building the edges from what a history shows ---------------------------------------------------------
@dataclass(frozen=True)
class Op:
    """A completed Jepsen op (a vertex): its process, where it was invoked and completed (history
    indices; invoked None when the history has no invocation), and its outcome."""

    id: Any
    process: Any
    invoked: int | None
    completed: int
    type: str


def realtime(ops: Iterable[Op], graph: Graph, keep: set[Any] | None = None) -> None:
    """rt edges (between ops of `keep`, when given): each op's predecessors are the ok completions
    before its invocation that no other ok completion before it follows (Elle's reduction). The
    frontier holds those completions; an ok op's completion replaces the ones that were there at
    its invocation, which are exactly those that completed before it was invoked."""
    events = []
    for op in ops:
        if op.invoked is not None:
            events.append((op.invoked, 0, op))
        if op.type == "ok":
            events.append((op.completed, 1, op))
    frontier: list[Op] = []
    for _at, is_completion, op in sorted(events, key=lambda x: (x[0], x[1])):
        if not is_completion:
            if keep is None or op.id in keep:
                for a in frontier:
                    if keep is None or a.id in keep:
                        graph.add(a.id, op.id, RT, "")  # worded when a witness shows it: most never are
        else:
            if op.invoked is not None:
                frontier = [a for a in frontier if a.completed > op.invoked]
            frontier.append(op)


def cycles_of(txns: dict[Any, Op], wr: Iterable[tuple[Any, ...]], ww: Iterable[tuple[Any, ...]]) -> dict[str, list[list[Edge]]]:
    """find() over the graph of these vertices, wr rows (add_wr's) and ww rows (add_ww's), real-time
    edges added, built only over the ops a cycle can pass through (`suspects`)."""
    wr, ww = list(wr), list(ww)
    keep = suspects(txns, ((r[0], r[1]) for r in (*wr, *ww)))
    graph = Graph()
    add_wr((r for r in wr if keep is None or (r[0] in keep and r[1] in keep)), graph)
    add_ww((r for r in ww if keep is None or (r[0] in keep and r[1] in keep)), graph)
    realtime(txns.values(), graph, keep)
    return find(graph)


def suspects(txns: dict[Any, Op], edges: Iterable[tuple[Any, Any]]) -> set[Any] | None:
    """The ops that can lie on a cycle: those completed within the span of some descending edge, a
    ww or wr edge to an op that completed before its source did (None: every op, and every end of
    an edge). Why: along any other edge, rt ones included, completion indices rise; so a cycle must
    descend somewhere, and a vertex on it with completion c lies within the span of the cycle's last
    descent from above c to at or below it. On a clean history descents are few and short, and so is
    the graph the search builds."""
    done = {v: op.completed for v, op in txns.items()}
    spans = []
    for src, dst in edges:
        if src not in done or dst not in done:  # an edge's end that is no completed op: nothing to go by
            return None
        if done[dst] < done[src]:
            spans.append((done[dst], done[src]))
    if not spans:
        return set()
    spans.sort()
    merged = [list(spans[0])]
    for lo, hi in spans[1:]:
        if lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    starts = [lo for lo, _ in merged]
    keep = set()
    for v, c in done.items():
        i = bisect_right(starts, c) - 1
        if i >= 0 and c <= merged[i][1]:
            keep.add(v)
    return keep


def txn_ops(rows: Iterable[tuple[Any, Any, int, str]]) -> dict[Any, Op]:
    """The vertices from a history's Jepsen send/poll/txn ops, (process, Jepsen op, index, type) in
    index order: a completion is a vertex, invoked where its process's open invocation was (Jepsen's
    processes have one op open at a time)."""
    out: dict[Any, Op] = {}
    invoked: dict[Any, tuple[Any, int]] = {}
    for process, group, index, kind in rows:
        if kind == "invoke":
            if invoked.get(process, (None,))[0] != group:
                invoked[process] = (group, index)
        elif group not in out:
            start = invoked.pop(process, None)
            out[group] = Op(group, process, None if start is None else start[1], index, kind)
    return out


def add_ww(rows: Iterable[tuple[Any, Any, Any, Any, Any, Any]], graph: Graph) -> None:
    """ww edges: (writer of v1, writer of v2, topic, partition, v1, v2), v2 right after v1 in the key's
    version order; taken in a fixed order, so both engines explain an edge alike."""
    for src, dst, topic, p, v1, v2 in sorted(rows, key=lambda r: (str(r[2]), r[3], str(r[4]), str(r[0]), str(r[1]))):
        graph.add(src, dst, WW, f"{topic}/{p}: {v1} then {v2} in its version order")


def add_wr(rows: Iterable[tuple[Any, Any, Any, Any, Any]], graph: Graph) -> None:
    """wr edges: (writer of v, an op that read it, topic, partition, v), in a fixed order as add_ww."""
    for src, dst, topic, p, v in sorted(rows, key=lambda r: (str(r[2]), r[3], str(r[4]), str(r[0]), str(r[1]))):
        graph.add(src, dst, WR, f"{topic}/{p} = {v} written, then read")


def witness(name: str, cycle: list[Edge], ops: dict[Any, Op]) -> dict[str, Any]:
    """A cycle as a check's witness row: its ops, its steps in words, and one sentence."""
    why = [e.why or f"op {e.src} completed before op {e.dst} was invoked" for e in cycle]
    steps = [{"from": e.src, "to": e.dst, "kind": e.kind, "why": w} for e, w in zip(cycle, why)]
    words = "; ".join(f"op {e.src} -{e.kind}-> op {e.dst} ({w})" for e, w in zip(cycle, why))
    involved = [e.src for e in cycle]
    return {"ops": involved, "processes": [ops[o].process if o in ops else None for o in involved],
            "steps": steps, "length": len(cycle), "cycle": f"{name}: {words}"}


def found(name: str, cycles_found: dict[str, list[list[Edge]]], ops: dict[Any, Op]) -> Any:
    """The check `name`'s Found (both engines): its witnesses, or for a kind Jepsen allows only their count."""
    from chaoskit.checkers.findings import Found
    from chaoskit.checkers.result import MAX_WITNESSES

    rows = [witness(name, c, ops) for c in cycles_found.get(name, [])]  # find() gave them in order
    if name in ALLOWED:
        return Found(0, [], {"transactions": len(ops), "allowed": len(rows)})
    return Found(len(rows), rows[:MAX_WITNESSES], {"transactions": len(ops), "allowed": 0})


def check_functions(found_of: Any) -> tuple[Any, ...]:
    """An engine's functions for G0, G1c, G0-realtime and G1c-realtime (in KINDS' order), each
    `found_of(tables, name)`: what the engines' checks modules name after the checks."""
    def one(name: str) -> Any:
        def check(t: Any) -> Any:
            return found_of(t, name)
        check.__name__ = name.replace("-", "_")
        return check
    return tuple(one(name) for name in KINDS)
