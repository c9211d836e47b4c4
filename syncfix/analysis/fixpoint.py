"""Memoised recursive facts about syntax nodes, with loop-carried cycles solved by iteration.

A fact of a node (its value, dtype, shape...) depends on the facts of other nodes, and a
loop-carried binding (``x = x + 1`` in a loop) makes that dependency cyclic. Answering each
question by plain recursion re-walks shared definitions once per path, which is exponential in
the number of chained updates. Here every question asked from outside (a *query*) is answered
in rounds: within a round each ``(fact, node)`` is computed once; a node met again while it is
still being computed reads its value from the previous round (``bottom`` in the first). When a
round reproduces every value it read that way, the values are a fixpoint and are kept for good.
Each round is linear in the nodes and edges the query reaches.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar, cast

#: Rounds before a query gives up (its answer becomes ``top``); monotone facts settle in 2-3.
MAX_ROUNDS = 8

Key = tuple[str, Hashable]
T = TypeVar("T")


class FactSolver:
    """Facts memoised per ``(fact, node)``; ``work`` counts the computations."""

    def __init__(self) -> None:
        self._done: dict[Key, Any] = {}
        self._round: dict[Key, Any] | None = None
        self._assumed: dict[Key, Any] = {}
        self._read: dict[Key, Any] = {}  # keys read under an assumption, with their bottom
        self._busy: set[Key] = set()
        #: Facts computed so far (rounds included): tests bound it to show linear cost.
        self.work = 0

    @property
    def active(self) -> bool:
        """Is a query being answered (so a result may rest on an assumption)?"""
        return self._round is not None

    def get(self, fact: str, node: Hashable, compute: Callable[[Any], T], bottom: Any, top: Any) -> T:
        """The fact ``fact`` of ``node``: ``compute(node)`` once, ``bottom`` assumed on a cycle,
        ``top`` (claims nothing) if the cycle does not settle."""
        key = (fact, node)
        if key in self._done:
            return cast(T, self._done[key])
        current = self._round
        if current is None:
            return cast(T, self._query(key, node, compute, bottom, top))
        if key in current:
            return cast(T, current[key])
        if key in self._busy:
            self._read[key] = bottom
            return cast(T, self._assumed.get(key, bottom))
        return cast(T, self._compute(key, node, compute, current))

    def _compute(self, key: Key, node: Hashable, compute: Callable[[Any], Any], current: dict[Key, Any]) -> Any:
        self.work += 1
        self._busy.add(key)
        try:
            result = compute(node)
        finally:
            self._busy.discard(key)
        current[key] = result
        return result

    def _query(self, key: Key, node: Hashable, compute: Callable[[Any], Any], bottom: Any, top: Any) -> Any:
        try:
            for _ in range(MAX_ROUNDS):
                current: dict[Key, Any] = {}
                self._round, self._read = current, {}
                result = self._compute(key, node, compute, current)
                if all(current[k] == self._assumed.get(k, b) for k, b in self._read.items()):
                    self._done.update(current)
                    return result
                self._assumed = current
            # No fixpoint in reach: claim nothing for this query (its parts are asked afresh).
            self._done[key] = top
            return top
        finally:
            self._round, self._read, self._assumed = None, {}, {}
            self._busy.clear()


#: "No information yet" inside a cycle of bindings: the identity of :func:`agree`.
CYCLE: object = object()


def solve(solver: FactSolver, fact: str, node: Hashable, compute: Callable[[Any], object], cycle: object) -> object:
    """A fact whose cycles start from the :data:`CYCLE` marker ``cycle``: a query whose only
    bindings are cyclic (``x = x * 2`` and nothing else) answers None (unknown)."""
    result = solver.get(fact, node, compute, cycle, None)
    if result is CYCLE and not solver.active:
        return None
    return result


def agree(items: Iterable[object]) -> object:
    """The one value every item has (cycle markers ignored); None if they differ or any is None."""
    result: object = CYCLE
    for item in items:
        if item is CYCLE:
            continue
        if item is None:
            return None
        if result is CYCLE:
            result = item
        elif result != item:
            return None
    return result
