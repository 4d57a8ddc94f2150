"""Wing-Gong linearizability search with Lowe's memoization, for one sub-history.

The history is a doubly linked list of call and return entries in real-time order. Walking from
the head, a call entry whose op the model accepts in the current state is linearized next: its
call and return entries are lifted out of the list and the walk restarts at the head. Reaching
a return entry means that op could not be placed before it returned, so the search backtracks:
the last linearized op goes back into the list and the walk goes on after it. Lowe's cache of
(linearized set, state) pairs prunes every configuration already explored.

Indeterminate ops have a call entry but no return entry: they may be linearized anywhere after
their call, and the search succeeds once every completed op is linearized, so an indeterminate
op that never fits is simply dropped (it never took effect).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from chaoskit.checkers.linear.models import INCONSISTENT, Model
from chaoskit.checkers.linear.subhistory import Operation

BUDGET_CHECK_EVERY = 512  # steps between looks at the clock


@dataclass
class SearchResult:
    valid: Any  # True, False or "unknown"
    ops: int
    steps: int
    elapsed_s: float
    prefix: list[int] = field(default_factory=list)  # invalid: the longest linearizable order found (invoke indexes)
    failed: Operation | None = None  # invalid: the op that cannot be placed after that prefix
    state: Any = None  # invalid: the model's state after the prefix
    error: str | None = None  # unknown: why


def search(ops: list[Operation], model: Model, budget_s: float = 30.0) -> SearchResult:
    started = time.monotonic()
    deadline = started + budget_s
    n = len(ops)
    # entries 1..E in real-time order; 0 is the head sentinel, E+1 the tail
    events = sorted([(op.call, i, True) for i, op in enumerate(ops)]
                    + [(op.ret, i, False) for i, op in enumerate(ops) if op.ret is not None])
    size = len(events)
    nxt = list(range(1, size + 2)) + [size + 1]
    prv = [0] + list(range(0, size + 1))
    entry_op = [-1] + [i for _, i, _ in events] + [-1]
    is_call = [False] + [call for _, _, call in events] + [False]
    return_entry = [0] * n
    for entry in range(1, size + 1):
        if not is_call[entry]:
            return_entry[entry_op[entry]] = entry
    steps_of = [model.steps[op.f] for op in ops]
    args = [op.arg for op in ops]
    read_only = [op.f in model.read_only for op in ops]

    def unlink(entry: int) -> None:
        nxt[prv[entry]] = nxt[entry]
        prv[nxt[entry]] = prv[entry]

    def relink(entry: int) -> None:  # exact inverse of unlink when undone in reverse order
        nxt[prv[entry]] = entry
        prv[nxt[entry]] = entry

    def start() -> int:
        """Where the walk (re)starts: a read that fits now, if any op still open is one, else the head.
        Placing such a read at once is safe (see the note where reads are undone), and doing it before
        any write spares the backtracking that trying writes first would cost."""
        entry = nxt[0]
        while is_call[entry]:
            i = entry_op[entry]
            if read_only[i] and steps_of[i](state, args[i]) is not INCONSISTENT \
                    and (linearized | (1 << i), state) not in cache:
                return entry
            entry = nxt[entry]
        return nxt[0]

    remaining = sum(1 for op in ops if op.ret is not None)
    state = model.initial
    linearized = 0
    stack: list[tuple[int, Any]] = []
    cache: set[tuple[int, Any]] = set()
    best: SearchResult | None = None
    steps = 0
    entry = start()
    while remaining:
        steps += 1
        if steps % BUDGET_CHECK_EVERY == 0 and time.monotonic() > deadline:
            return SearchResult("unknown", n, steps, time.monotonic() - started,
                                error=f"the search ran out of its {budget_s:g} s budget after {steps} steps")
        if is_call[entry]:
            i = entry_op[entry]
            new_state = steps_of[i](state, args[i])
            if new_state is not INCONSISTENT:
                config = (linearized | (1 << i), new_state)
                if config not in cache:
                    cache.add(config)
                    stack.append((entry, state))
                    linearized, state = config
                    unlink(entry)
                    if return_entry[i]:
                        unlink(return_entry[i])
                        remaining -= 1
                    entry = start()
                    continue
            entry = nxt[entry]
            continue
        # a return entry: its op found no place before returning
        if best is None or len(stack) > len(best.prefix):
            best = SearchResult(False, n, 0, 0.0, [ops[entry_op[e]].index for e, _ in stack],
                                ops[entry_op[entry]], state)
        while stack:
            entry, state = stack.pop()
            i = entry_op[entry]
            linearized ^= 1 << i
            if return_entry[i]:
                relink(return_entry[i])
                remaining += 1
            relink(entry)
            if not read_only[i]:
                break
            # A read that fit was placed at once; had any order worked without placing it there, one
            # placing it there would too (it changes no state and nothing still open returned before
            # its call), so its alternatives are dead: undo the op before it as well.
        else:
            break
        entry = nxt[entry]
    elapsed = time.monotonic() - started
    if not remaining:
        return SearchResult(True, n, steps, elapsed)
    assert best is not None
    best.steps, best.elapsed_s = steps, elapsed
    return best
