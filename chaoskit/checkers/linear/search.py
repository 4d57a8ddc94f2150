"""Wing-Gong linearizability search with Lowe's memoization, for one sub-history.

The history is a doubly linked list of call and return entries in real-time order. The ops that
may be linearized next (the candidates) are those whose call entry precedes the first return
entry left in the list. Linearizing one applies it to the model's state and lifts its call and
return entries out of the list; when no candidate fits, the search backtracks: the last
linearized op goes back into the list and the next candidate after it is tried. Lowe's cache of
(linearized set, state) pairs prunes every configuration already explored.

Two refinements keep concurrent histories tractable, both sound. A candidate read that fits is
placed first and never branched on (see `begin`). A read that can no longer fit, whatever ops
the model calls non-resetting do, kills the configuration unless an op that could reset the state
to what it saw may still come before it returns (the model's `doomed`, `resets`, `enables`).

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

BUDGET_CHECK_EVERY = 512  # steps between looks at the clock (and at the cache's size)
MAX_CONFIGS = 1_000_000  # cached configurations per sub-history; measured ~250 MB on a 4,000-op key
DEAD = -1  # "this configuration cannot be completed": backtrack


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


def unseen_indeterminate(ops: list[Operation], model: Model) -> list[Operation]:
    """The indeterminate ops the search may leave out: nobody saw what they would have left (see Model.mark)."""
    if model.mark is None:
        return []
    shown = model.visible(value for op in ops for value in model.seen(op.f, op.arg))
    out = []
    for op in ops:
        if op.ret is None and op.f not in model.read_only:
            mark = model.mark(op.f, op.arg)
            if mark is not None and not shown(mark):
                out.append(op)
    return out


def search(ops: list[Operation], model: Model, budget_s: float = 30.0, max_configs: int = MAX_CONFIGS) -> SearchResult:
    started = time.monotonic()
    deadline = started + budget_s
    unseen = {id(op) for op in unseen_indeterminate(ops, model)}
    if unseen:
        ops = [op for op in ops if id(op) not in unseen]
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
    doomed = [model.doomed.get(op.f) for op in ops]
    resets = [op.f in model.resets for op in ops]
    enables = model.enables

    def unlink(entry: int) -> None:
        nxt[prv[entry]] = nxt[entry]
        prv[nxt[entry]] = prv[entry]

    def relink(entry: int) -> None:  # exact inverse of unlink when undone in reverse order
        nxt[prv[entry]] = entry
        prv[nxt[entry]] = entry

    def first_return() -> int:
        entry = nxt[0]
        while is_call[entry]:
            entry = nxt[entry]
        return entry

    def after(tried: int) -> int:
        """The candidate to try after `tried` in this configuration (call order); 0 when none is left."""
        entry = nxt[tried]
        return entry if is_call[entry] else 0

    def begin() -> int:
        """The first candidate of a new configuration: a read that fits, else the earliest call.

        A candidate read that fits now is a forced move. It changes no state, and no op still open
        returned before its call, so any linearization from here can be rewritten with the read
        first. Hence if placing it here fails (now, or earlier: the cache knows), so does every
        alternative, and the configuration is dead."""
        end = first_return()
        entry = nxt[0]
        while entry != end:
            i = entry_op[entry]
            if read_only[i]:
                if steps_of[i](state, args[i]) is not INCONSISTENT:
                    return DEAD if (linearized | (1 << i), state) in cache else entry
                if doomed[i] and return_entry[i] and doomed[i](state, args[i]) and not rescuable(i):
                    culprit[0] = i  # the witness names this read, not whichever op returns first
                    return DEAD
            entry = nxt[entry]
        return nxt[0]

    def rescuable(read: int) -> bool:
        """Whether an op that resets the state towards what `read` saw may still come before it returns."""
        end, seen = return_entry[read], args[read]
        entry = nxt[0]
        while entry != end:
            j = entry_op[entry]
            if is_call[entry] and resets[j] and enables(seen, ops[j].f, args[j]):
                return True
            entry = nxt[entry]
        return False

    remaining = sum(1 for op in ops if op.ret is not None)
    culprit = [-1]  # the doomed read that made begin() answer DEAD
    state = model.initial
    linearized = 0
    stack: list[tuple[int, Any]] = []
    cache: set[tuple[int, Any]] = set()
    best_prefix: list[int] = []  # entries of the longest linearizable order found
    best_failed, best_state, low_water = -1, None, 0  # low_water: the stack's lowest depth since that order
    steps = 0
    entry = begin() if remaining else 0
    while remaining:
        steps += 1
        if steps % BUDGET_CHECK_EVERY == 0:
            if time.monotonic() > deadline:
                return SearchResult("unknown", n, steps, time.monotonic() - started,
                                    error=f"the search ran out of its {budget_s:g} s budget after {steps} steps")
            if len(cache) > max_configs:
                return SearchResult("unknown", n, steps, time.monotonic() - started,
                                    error=f"the search explored more than {max_configs} configurations (its memory "
                                          f"bound) after {steps} steps")
        if entry > 0:
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
                    entry = begin() if remaining else 0
                    continue
            entry = after(entry)
            continue
        # no candidate left (or a doomed read): the first-returning op cannot be placed after this prefix
        if len(stack) > len(best_prefix) or best_failed < 0:
            # the deepest dead end so far; only the part of the stack changed since the last one is copied
            del best_prefix[low_water:]
            best_prefix.extend(e for e, _ in stack[low_water:])
            low_water = len(stack)
            best_failed = culprit[0] if entry == DEAD and culprit[0] >= 0 else entry_op[first_return()]
            best_state = state
        culprit[0] = -1
        while stack:
            entry, state = stack.pop()
            low_water = min(low_water, len(stack))
            i = entry_op[entry]
            linearized ^= 1 << i
            if return_entry[i]:
                relink(return_entry[i])
                remaining += 1
            relink(entry)
            if not read_only[i]:
                break  # a forced read has no alternatives: undo the op before it too
        else:
            break
        entry = after(entry)
    elapsed = time.monotonic() - started
    if not remaining:
        return SearchResult(True, n, steps, elapsed)
    return SearchResult(False, n, steps, elapsed, [ops[entry_op[e]].index for e in best_prefix], ops[best_failed],
                        best_state)
