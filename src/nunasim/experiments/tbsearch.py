"""The best-performing threadblock count (the paper evaluates every configuration "with the
best-performing number of threadblocks", section 5.1): one search that ``simulate``,
``headline`` and ``fig9`` all use, so one experiment gives one number.

The candidates cover the paper's range, from one threadblock per peer up to
``MAX_THREADBLOCKS`` per GPU (the 1,008 of its Fig. 13): 1, 2, 4, ... threadblocks per peer,
and the largest count the range allows, and every one is considered: completion time is
not a smooth function of the count (a count can align a plan's chunks with the dies, pages
or domains and the next one not), so a search that stops at the first rise misses the best.
A candidate is placed and lowered (or its flows' demands worked out) first, which gives its
lower bound; when that bound is no shorter than the best completion so far the candidate
cannot win and is not run (``BestRun.skipped``). The answer is exactly the exhaustive
search's, and most of the cost of the largest counts is saved.

With ``granularity="auto"``, each count runs with the granularity the placement policy's
quick estimate picks (``policies.estimate``); the estimate sees port and stack load but not
the mesh links, so at the best count every other granularity ``auto`` may use is then
simulated too, and the fastest kept ("it may exhaustively try all available NAR
granularities", section 4.1.2). Results are cached per process, keyed by everything that
decides the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nunasim.collectives.builtins import builtin_plan
from nunasim.collectives.plan import Plan
from nunasim.engine.result import SimResult
from nunasim.errors import ConfigError
from nunasim.hardware import Pod
from nunasim.policies.place import auto_granularities
from nunasim.scenario import Configuration, Scenario, as_configuration

MAX_THREADBLOCKS = 1008


def candidate_counts(gpus: int, limit: int = MAX_THREADBLOCKS) -> tuple[int, ...]:
    """Threadblocks per GPU to try for a direct plan on ``gpus`` GPUs."""
    peers = gpus - 1
    counts, per_peer = [], 1
    while per_peer * peers <= limit:
        counts.append(per_peer * peers)
        per_peer *= 2
    top = (limit // peers) * peers
    if top >= peers and top not in counts:
        counts.append(top)
    return tuple(counts)


@dataclass(frozen=True)
class BestRun:
    """The fastest run of a search and every run it tried."""

    plan: Plan
    result: SimResult
    granularity: int  # NAR domains of the fastest run (1: none)
    tried: tuple[tuple[int, int, int], ...]  # (threadblocks per GPU, domains, completion ps)
    # not run: (threadblocks per GPU, domains, lower bound ps), a bound no shorter than
    # the best completion found before it, so the search's answer is the same without them
    skipped: tuple[tuple[int, int, int], ...] = ()

    @property
    def threadblocks(self) -> int:
        """Threadblocks per GPU of the fastest run."""
        return self.plan.threadblocks_per_gpu[0]


_CACHE: dict[tuple, BestRun] = {}


def best_threadblocks(
    pod: Pod,
    plan_name: str,
    size: int,
    config: Configuration | str,
    granularity: int | str | None = None,
    seed: int = 0,
    layout: str = "aligned",
    progress: Callable[[str], None] | None = None,
    gpus: int | None = None,
    engine: str = "auto",
) -> BestRun:
    """The fastest run of the built-in ``plan_name`` (on ``gpus`` GPUs when given) over the
    candidate threadblock counts, which replace any ``tbs=`` of the name; ``granularity``,
    when given, replaces the configuration's."""
    configuration = as_configuration(config, granularity)
    key = (pod, plan_name, gpus, size, configuration, seed, layout, engine)
    if key in _CACHE:
        return _CACHE[key]
    base = builtin_plan(plan_name, gpus=gpus)
    tried: list[tuple[int, int, int]] = []
    skipped: list[tuple[int, int, int]] = []
    best: tuple[Plan, SimResult, int] | None = None

    def attempt(plan: Plan, domains: int | str) -> None:
        nonlocal best
        if progress:
            progress(
                f"{configuration}, {plan.threadblocks_per_gpu[0]} threadblocks, {domains} domains"
            )
        scenario = Scenario(
            pod, plan, size, configuration, domains, seed, layout=layout, engine=engine
        )
        placement = scenario.placement()
        prepared = scenario.prepare(placement)
        count = plan.threadblocks_per_gpu[0]
        if best is not None and prepared.lower_bound_ps >= best[1].completion_ps:
            # It cannot finish sooner than the best so far, so it cannot be the best.
            skipped.append((count, placement.granularity, prepared.lower_bound_ps))
            return
        result = prepared.run()
        tried.append((count, placement.granularity, result.completion_ps))
        if best is None or result.completion_ps < best[1].completion_ps:
            best = (plan, result, placement.granularity)

    for count in candidate_counts(base.ngpus):
        try:
            plan = builtin_plan(plan_name, gpus=gpus, tbs=count)
        except ConfigError:  # a count the algorithm cannot split its work over
            continue
        attempt(plan, configuration.granularity)
    if best is None:
        raise ValueError(f"no threadblock count works for {plan_name}")
    if configuration.granularity == "auto" and configuration.uses_domains:
        plan, _, chosen = best
        for domains in auto_granularities(pod.socket):
            if domains != chosen:
                attempt(plan, domains)
    found = BestRun(best[0], best[1], best[2], tuple(tried), tuple(skipped))
    _CACHE[key] = found
    return found
