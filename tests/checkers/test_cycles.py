"""The cycle search builds its graph only over the ops a cycle can pass through: on any history it
must find exactly what the search over the whole graph finds (checkers/cycles.py `suspects`)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskit.checkers import cycles


@st.composite
def histories(draw):
    """Ops with overlapping spans (some ok, some not, some never invoked) and random wr and ww
    edges between them: forward, backward and between overlapping ops alike."""
    n = draw(st.integers(2, 12))
    spans = [(t, t + draw(st.integers(1, 20))) for t in draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))]
    events = sorted((t, i, kind) for i, span in enumerate(spans) for kind, t in enumerate(span))
    at = {(i, kind): index for index, (_t, i, kind) in enumerate(events)}  # history indices, invocations first
    txns = {}
    for i in range(n):
        invoked = None if draw(st.integers(0, 9)) == 0 else at[(i, 0)]
        txns[i] = cycles.Op(i, i % 3, invoked, at[(i, 1)], draw(st.sampled_from(["ok", "ok", "info", "fail"])))
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    orphan = [(n, draw(st.integers(0, n - 1)))] if draw(st.integers(0, 4)) == 0 else []  # op n: no completion
    wr = [(a, b, "t", 0, f"v{a}") for a, b in draw(st.lists(pair, max_size=3 * n)) + orphan]
    ww = [(a, b, "t", 1, f"v{a}", f"v{b}") for a, b in draw(st.lists(pair, max_size=2 * n))]
    return txns, wr, ww


@settings(max_examples=200, deadline=None)
@given(histories())
def test_pruned_search_finds_what_the_whole_graph_holds(history):
    txns, wr, ww = history
    whole = cycles.Graph()
    cycles.add_wr(wr, whole)
    cycles.add_ww(ww, whole)
    cycles.realtime(txns.values(), whole)
    assert cycles.cycles_of(txns, wr, ww) == cycles.find(whole)


def test_a_clean_history_builds_no_graph():
    """Every edge forward in time: no op can lie on a cycle, so none is kept."""
    txns = {i: cycles.Op(i, 0, 2 * i, 2 * i + 1, "ok") for i in range(5)}
    assert cycles.suspects(txns, [(0, 1), (1, 3), (2, 4)]) == set()
    assert cycles.suspects(txns, [(0, 1), (3, 1)]) == {1, 2, 3}  # 3 -> 1 descends: ops completed 3..7


@settings(max_examples=200, deadline=None)
@given(histories())
def test_real_time_edges_are_elles_reduction(history):
    """c -> op exactly when c completed ok before op was invoked and no ok op invoked after c
    completed had completed by then (the interval order, transitively reduced)."""
    txns, _, _ = history
    ops = list(txns.values())

    def before(a, b):
        return a.type == "ok" and b.invoked is not None and a.completed < b.invoked
    want = {(a.id, b.id) for a in ops for b in ops if before(a, b) and not any(before(a, c) and before(c, b) for c in ops)}
    graph = cycles.Graph()
    cycles.realtime(ops, graph)
    assert {(e.src, e.dst) for e in graph.edges.values()} == want
