"""Work kept per plan object: plans are frozen, so what is worked out from a plan alone
(its access table, placement's facts, the step graph's plan-only part) is done once per
plan and kept for as long as the plan lives. ``builtin_plan`` hands back the same object
for the same recipe, so a sweep's searches share it across configurations and sizes."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from nunasim.collectives.builder import collector_paused
from nunasim.collectives.plan import Plan

T = TypeVar("T")


class PerPlan(Generic[T]):
    """Values by plan object; entries of plans that are gone are dropped whenever another
    is added."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Plan], T]] = {}

    def get(self, plan: Plan, build: Callable[[Plan], T]) -> T:
        """The value for ``plan``, built by ``build`` on first use, with the collector
        paused (``collector_paused``): what a build makes is its value or garbage without
        cycles, and the collections it would set off walk the plan's objects again each time
        (with the collector on throughout, its walks were 37 % of a 64-GPU plan's cold
        placements)."""
        key = id(plan)
        known = self._entries.get(key)
        if known is not None and known[0]() is plan:
            return known[1]
        with collector_paused():
            value = build(plan)
        for gone in [k for k, (ref, _) in self._entries.items() if ref() is None]:
            del self._entries[gone]
        self._entries[key] = (weakref.ref(plan), value)
        return value
