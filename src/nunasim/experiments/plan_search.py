"""What a plan file's granularity search found, and how its run compares with UA's.

A plan file fixes its threadblocks, so ``simulate --plan`` searches its NAR granularity by
simulation (``tbsearch``: every granularity ``auto`` may use, each run to its end). This
module reads that search: the winner, every granularity's completion, and how much the
winner gains over the runner-up, the placement policy's estimate and baseline routing
(one domain). It then runs the plan under UA and, where the searched run is still slower,
names what the two runs measured differently (``loss_cause``); nothing in it is inferred
that the runs' tables do not show.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nunasim.engine.result import SimResult
from nunasim.experiments.sweep import Point, Progress, run_point
from nunasim.experiments.tbsearch import BestRun
from nunasim.hardware import Preset
from nunasim.scenario import Configuration
from nunasim.units import PS_PER_NS

BASELINE = 1  # one domain: baseline routing
REFERENCE = "UA"  # the configuration a searched plan is compared with
# The store latency components of ``SimResult.summary``'s breakdown, in path order.
STORE_PARTS = ("l1", "src_noc", "port", "plane", "dst_noc", "memory")


@dataclass(frozen=True)
class GranularitySearch:
    """A plan's granularity search: the winner and each granularity's completion (ps), in
    the order run; ``estimated`` is the placement policy's estimate's pick."""

    winner: int
    completions: dict[int, int]
    estimated: int | None

    @classmethod
    def of(cls, best: BestRun) -> GranularitySearch:
        return cls(best.granularity, {g: ps for _, g, ps in best.tried}, best.estimated)

    @property
    def runner_up(self) -> int | None:
        """The fastest granularity but the winner (ties: the first run), if another ran."""
        others = [g for g in self.completions if g != self.winner]
        return min(others, key=self.completions.__getitem__) if others else None

    def speedup_over(self, granularity: int | None) -> float | None:
        """The winner's speedup over ``granularity`` (its completion over the winner's), or
        None if that granularity did not run."""
        if granularity is None or granularity not in self.completions:
            return None
        return self.completions[granularity] / self.completions[self.winner]

    def summary(self) -> dict[str, Any]:
        """The search for ``simulate --json``: times in ns."""

        def versus(granularity: int | None) -> dict[str, Any] | None:
            speedup = self.speedup_over(granularity)
            if speedup is None:
                return None
            ns = self.completions[granularity] / PS_PER_NS  # type: ignore[index]
            return {"granularity": granularity, "completion_ns": ns, "speedup": speedup}

        return {
            "winner": self.winner,
            "completion_ns": {str(g): ps / PS_PER_NS for g, ps in self.completions.items()},
            "runner_up": versus(self.runner_up),
            "estimate": versus(self.estimated),
            "baseline": versus(BASELINE),
        }


@dataclass(frozen=True)
class Busiest:
    """The busiest resource of one kind in a run: busy time (flits times occupancy), its
    share of the run, and its longest wait (NaN where the engine has no queues)."""

    kind: str
    gpu: int
    index: int
    busy_ps: int
    utilisation: float
    max_wait_ps: float

    def describe(self) -> str:
        wait = "" if np.isnan(self.max_wait_ps) else f", longest wait {_ns(self.max_wait_ps)}"
        return (
            f"{self.kind} {self.index} of GPU {self.gpu}: busy {_ns(self.busy_ps)} "
            f"({self.utilisation:.0%} of the run){wait}"
        )


def busiest(result: SimResult, kind: str) -> Busiest | None:
    """The busiest resource of ``kind`` in ``result`` (the first of equally busy), or None
    if the run used none."""
    table = result.resources
    rows = table[table["kind"] == kind]
    if rows.empty:
        return None
    row = rows.loc[rows["busy_ps"].idxmax()]
    wait = float(row["max_wait_ps"]) if "max_wait_ps" in row else float("nan")
    return Busiest(
        kind,
        int(row["gpu"]),
        int(row["index"]),
        int(row["busy_ps"]),
        float(row["busy_ps"]) / max(result.completion_ps, 1),
        wait,
    )


@dataclass(frozen=True)
class LossCause:
    """What the slower run measured against the faster: the resource kind whose busiest
    member grew most over the other run's busiest of that kind (by busy time, or, where
    none is busier, by longest wait), both busiest resources, and the store latency part
    that grew most (ns, means over stores)."""

    ours: Busiest
    theirs: Busiest
    by: str  # "busy" or "wait"
    store_part: str | None
    store_part_ns: tuple[float, float]  # ours, theirs

    def describe(self, theirs_name: str = REFERENCE) -> str:
        more = "busier" if self.by == "busy" else "queues longer"
        text = (
            f"its busiest {self.ours.kind} {more} than {theirs_name}'s: "
            f"{self.ours.describe()}, against {self.theirs.describe()}"
        )
        if self.store_part is not None:
            ours, theirs = self.store_part_ns
            text += f"; store latency's {self.store_part} {ours:.1f} ns against {theirs:.1f} ns"
        return text

    def summary(self) -> dict[str, Any]:
        def plain(b: Busiest) -> dict[str, Any]:
            wait = None if np.isnan(b.max_wait_ps) else b.max_wait_ps / PS_PER_NS
            return {
                "gpu": b.gpu,
                "index": b.index,
                "busy_ns": b.busy_ps / PS_PER_NS,
                "utilisation": b.utilisation,
                "max_wait_ns": wait,
            }

        return {
            "kind": self.ours.kind,
            "by": self.by,
            "resource": plain(self.ours),
            REFERENCE.lower(): plain(self.theirs),
            "store_part": self.store_part,
            "store_part_ns": list(self.store_part_ns) if self.store_part else None,
            "text": self.describe(),
        }


def loss_cause(ours: SimResult, theirs: SimResult) -> LossCause | None:
    """Why ``ours`` ends later than ``theirs``, as far as their resource tables show: the
    kind whose busiest resource is busier in ours than theirs's busiest by the largest
    ratio; if no kind's is busier, the one whose longest wait grew most. None if neither
    grew (the tables then show no resource that explains the loss)."""
    pairs = []
    for kind in dict.fromkeys(ours.resources["kind"]):
        mine, other = busiest(ours, kind), busiest(theirs, kind)
        if mine is not None and other is not None:
            pairs.append((mine, other))

    def grown(value: float, before: float) -> float:
        return value / before if before > 0 else (np.inf if value > 0 else 0.0)

    by, chosen = "busy", None
    busier = [(grown(m.busy_ps, o.busy_ps), m, o) for m, o in pairs if m.busy_ps > o.busy_ps]
    if busier:
        chosen = max(busier, key=lambda item: item[0])
    else:
        waits = [
            (grown(m.max_wait_ps, o.max_wait_ps), m, o)
            for m, o in pairs
            if not np.isnan(m.max_wait_ps) and m.max_wait_ps > o.max_wait_ps
        ]
        by, chosen = "wait", max(waits, key=lambda item: item[0]) if waits else None
    if chosen is None:
        return None
    _, mine, other = chosen
    part, part_ns = _grown_store_part(ours, theirs)
    return LossCause(mine, other, by, part, part_ns)


def _grown_store_part(ours: SimResult, theirs: SimResult) -> tuple[str | None, tuple[float, float]]:
    """The store latency part whose mean grew most (ns), if any grew."""
    mine = ours.summary()["store_breakdown_ns"]
    other = theirs.summary()["store_breakdown_ns"]
    growth = {part: mine[part] - other[part] for part in STORE_PARTS}  # type: ignore[index]
    part = max(growth, key=growth.__getitem__)
    if growth[part] <= 0:
        return None, (0.0, 0.0)
    return part, (float(mine[part]), float(other[part]))  # type: ignore[index]


@dataclass(frozen=True)
class PlanReport:
    """A searched plan's run: its search, UA's run of the plan, and the loss's measured
    cause when the searched run is slower than UA's (else None)."""

    search: GranularitySearch
    reference: SimResult
    cause: LossCause | None
    completion_ps: int

    @property
    def speedup(self) -> float:
        """UA's completion over the searched run's."""
        return self.reference.completion_ps / self.completion_ps

    def summary(self) -> dict[str, Any]:
        return {
            "granularity_search": self.search.summary(),
            REFERENCE.lower(): {
                "completion_ns": self.reference.completion_ps / PS_PER_NS,
                "speedup": self.speedup,
                "cause": self.cause.summary() if self.cause else None,
            },
        }


def plan_report(
    point: Point,
    preset: Preset,
    best: BestRun,
    result: SimResult,
    progress: Progress | None = None,
) -> PlanReport:
    """The report of ``point`` (a searched plan file) whose search is ``best`` and run
    ``result``: runs the plan under UA (one more run) to compare."""
    if progress:
        progress(f"{point.plan}, {REFERENCE}")
    reference = run_point(replace(point, configuration=Configuration.parse(REFERENCE)), preset)
    slower = result.completion_ps > reference.completion_ps
    cause = loss_cause(result, reference) if slower else None
    return PlanReport(GranularitySearch.of(best), reference, cause, result.completion_ps)


def _ns(ps: float) -> str:
    return f"{ps / PS_PER_NS:,.1f} ns"
