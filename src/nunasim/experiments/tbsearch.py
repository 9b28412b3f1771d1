"""The best-performing threadblock count (the paper evaluates every configuration "with the
best-performing number of threadblocks", section 5.1): one search that ``simulate``,
``headline`` and ``fig9`` all use, so one experiment gives one number.

The candidates cover the paper's range, from one threadblock per peer up to
``SEARCH_MAX_THREADBLOCKS_PER_GPU`` (the 1,008 per GPU of its Fig. 13): 1, 2, 4, ...
threadblocks per peer, and the largest count the range allows, and every one is
considered: completion time is not a smooth function of the count (a count can align a
plan's chunks with the dies, pages or domains and the next one not), so a search that
stops at the first rise misses the best.
The answer is the exhaustive search's: the fastest run, the first in that ascending order
(its *rank*) among equally fast ones. Two rules make the losers cheap without changing it:

- A candidate is placed and lowered (or its flows' demands worked out) first, which gives
  its lower bound (on the packet engine also its CUs' window bound: ``skip_bound_ps``);
  when that bound shows it cannot beat the best run so far it is not run
  (``BestRun.skipped``).
- A candidate that is run gets the best completion so far as its deadline: its engine
  stops it once its clock passes that time with a step unfinished, or (the packet engine)
  once the work its resources have left cannot end by then, since it would then complete
  later (``BestRun.cut``).

One more rule trusts a measured error band instead of a bound. An engine with a cheaper,
approximate run (``PreparedRun.screen``: the flow engine's wider waves) screens a
candidate before its run once there is a deadline, and a candidate the screen judges to
end after it is not run (``BestRun.screened``). The granularity round screens all its
candidates first and runs them in the order of their screened times, so the likely best
runs first and the others are mostly ruled out by their screens. The answer is the
exhaustive search's wherever the screen's error stays within its margin, which it did on
every run measured (docs/engine-measured.md, "Candidates screened with wider waves").

Both save most when the best is found early, so the counts are tried from the largest
down: the large collectives that cost most are fastest with many threadblocks, and the
few threadblocks per peer that lose there are window-bound runs several times longer,
which the deadline stops early.

With ``granularity="auto"`` there are three searches (``SEARCHES``):

- ``staged`` (the default, the figures' so far): each count runs with the granularity the
  placement policy's quick estimate picks (``policies.estimate``); the estimate sees port
  and stack load but not the mesh links, so at the best count every other granularity
  ``auto`` may use is then simulated too, and the fastest kept. Where the links bound a
  run the estimate can judge a count at a poor granularity, and the count is then lost:
  ``benchmarks/granularity_search.py`` measures up to 27 % at 1 GB (docs/reproduction.md).
- ``joint``: every count with every granularity ``auto`` may use ("it may exhaustively try
  all available NAR granularities", section 4.1.2), ranked count by count and, within a
  count, in ``auto_granularities``'s order; the same two rules make its losers cheap, and
  it costs 2-5 times the staged search (measured on Fig. 9's grid).

- ``fast``: the staged search's count round, then, where the best count runs on an engine
  with a cheaper run to screen by (the flow engine's wider waves), a granularity round that
  screens every granularity (each screen stopped once it passes the least so far by the
  screen's margin; a bound past the best rules one out with no screen) and runs only the
  least screened, if it is not the best already. On an engine without a screen it is the
  staged search. Its answer may be a slightly slower run than the staged search's: the
  screen's error (docs/engine-measured.md, "Candidates screened with wider waves") decides
  between near ties. Its band against the shipped exhaustive answers is measured
  (``benchmarks/search_band.py``, docs/tuning.md, "Which search").

A configuration with one granularity (no domains, or a granularity given) has one search.

A plan file fixes its threadblocks, so its search is the granularity round alone: the
estimate's granularity, then every other one ``auto`` may use, each run to its end (no
bound, deadline or screen rules one out), so that the report has every granularity's
completion (``BestRun.tried``), not just the winner's; there are at most
``len(auto_granularities)`` runs.
Results are cached per process, keyed by everything that decides the run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from nunasim.collectives.builtins import builtin_plan, is_builtin_name
from nunasim.collectives.plan import Plan
from nunasim.engine.base import PreparedRun
from nunasim.engine.result import SimResult
from nunasim.errors import ConfigError
from nunasim.experiments.search_runs import CandidateCost, Screened, SearchRuns, never_run
from nunasim.hardware import Pod
from nunasim.io.plans import load_plan
from nunasim.mapping.placement import Placement
from nunasim.policies.place import auto_granularities
from nunasim.scenario import Configuration, Scenario, as_configuration
from nunasim.units import format_time

# The most threadblocks per GPU a search tries: the paper's range (its Fig. 13).
SEARCH_MAX_THREADBLOCKS_PER_GPU = 1008
# The searches over threadblock counts and NAR granularities (see the module's text).
SEARCHES = ("staged", "joint", "fast")
# Runs of one search in flight at once, at most: each holds its prepared state (about
# 1.3 GB for a 64-GPU 1 GB candidate), and a search has only a handful worth running.
MAX_SEARCH_THREADS = 2


def default_threads() -> int:
    """Runs a search started on its own may keep in flight: the cores this process may
    use, at most ``MAX_SEARCH_THREADS``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, MAX_SEARCH_THREADS))


def candidate_counts(gpus: int, limit: int = SEARCH_MAX_THREADBLOCKS_PER_GPU) -> tuple[int, ...]:
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
    # run to the end, in the order tried: (threadblocks per GPU, domains, completion ps)
    tried: tuple[tuple[int, int, int], ...]
    # not run: (threadblocks per GPU, domains, lower bound ps), a bound that shows it cannot
    # beat the best completion found before it, so the search's answer is the same without it
    skipped: tuple[tuple[int, int, int], ...] = ()
    # stopped: (threadblocks per GPU, domains, deadline ps), still unfinished when its clock
    # passed the best completion found before it, so it would have completed later
    cut: tuple[tuple[int, int, int], ...] = ()
    # what each candidate cost, in the order offered: see ``CandidateCost``
    costs: tuple[CandidateCost, ...] = ()
    # not run: (threadblocks per GPU, domains, deadline ps), judged by its engine's screen
    # (``PreparedRun.screen``) to complete after the best completion found before it
    screened: tuple[tuple[int, int, int], ...] = ()
    # the granularity the placement policy's estimate picked at the best count, where the
    # staged search's granularity round ran (None: it did not)
    estimated: int | None = None
    # the fast search's granularity round: (threadblocks per GPU, domains, the flow
    # engine's screened time in ps, -1 when its screen stopped past the best so far), in
    # the order screened; the least, if it is not the best already, is then run
    ranked: tuple[tuple[int, int, int], ...] = ()
    search: str = "staged"  # the search that found it (``SEARCHES``)

    @property
    def threadblocks(self) -> int:
        """Threadblocks per GPU of the fastest run."""
        return self.plan.threadblocks_per_gpu[0]


_CACHE: dict[tuple, BestRun] = {}
_LAST = 1 << 62  # sorts after every screened time


def effective_search(search: str, searched: bool, fixed: bool) -> str:
    """The search a request for ``search`` runs: ``staged`` where no other can differ from
    it (a plan file, whose granularity round runs every candidate to its end; one
    granularity to try), else ``search``. ``searched``: whether the configuration has
    granularities to search."""
    if search not in SEARCHES:
        raise ConfigError(f"unknown search {search!r} (known: {', '.join(SEARCHES)})")
    if fixed or not searched:
        return "staged"
    return search


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
    threads: int = 0,
    search: str = "staged",
) -> BestRun:
    """The fastest run of the built-in ``plan_name`` (on ``gpus`` GPUs when given) over the
    candidate threadblock counts, which replace any ``tbs=`` of the name; or, for a plan
    file, over the granularities alone, each run to its end (see the module's text).
    ``granularity``, when given, replaces the configuration's. ``threads``: runs that may
    go on at once in other threads while this one prepares the next candidates (0: one at
    a time, here); the answer is the same. ``search``: ``staged``, ``joint`` or ``fast``
    (see the module's text; ``effective_search`` says which runs)."""
    configuration = as_configuration(config, granularity)
    searched = configuration.granularity == "auto" and configuration.uses_domains
    fixed = not is_builtin_name(plan_name)  # a plan file: its threadblocks are its own
    search = effective_search(search, searched, fixed)
    joint, fast = search == "joint", search == "fast"
    key = (pod, plan_name, gpus, size, configuration, seed, layout, engine, search)
    if key in _CACHE:
        return _CACHE[key]
    if fixed and gpus is not None:
        raise ConfigError("a plan file fixes its own GPUs", source=plan_name)
    base = load_plan(plan_name) if fixed else builtin_plan(plan_name, gpus=gpus)
    runs = SearchRuns(threads, to_the_end=fixed)

    def prepare(plan: Plan, domains: int | str) -> tuple[Placement, PreparedRun, float]:
        started = time.thread_time()
        scenario = Scenario(
            pod, plan, size, configuration, domains, seed, layout=layout, engine=engine
        )
        placement = scenario.placement()
        prepared = scenario.prepare(placement)
        return placement, prepared, time.thread_time() - started

    def attempt(
        plan: Plan,
        domains: int | str,
        rank: int,
        assumes: Plan | None = None,
        screened: Screened | None = None,
    ) -> None:
        if progress:
            settled = len(runs.tried) + len(runs.skipped) + len(runs.cut) + len(runs.screened)
            best = runs.best[1].completion_ps if runs.best is not None else None
            so_far = f", best so far {format_time(best)}" if best is not None else ""
            progress(
                f"{configuration}, {plan.threadblocks_per_gpu[0]} threadblocks, {domains} "
                f"domains (candidate {settled + len(runs.pending) + 1}{so_far})"
            )
        runs.make_room()
        if screened is None:
            placement, prepared, spent = prepare(plan, domains)
            runs.offer(
                plan,
                placement.granularity,
                prepared.skip_bound_ps,
                rank,
                prepared.run,
                assumes,
                spent,
                prepared.screen,
            )
            return
        # Prepared and screened already: prepared again only if it may still run.
        run, spent = never_run, 0.0
        deadline = runs.deadline()
        if screened.kept is not None:
            run = screened.kept.run
        elif deadline is not None and screened.screen(deadline) is not None:
            _, prepared, spent = prepare(plan, domains)
            run = prepared.run
        runs.offer(
            plan,
            screened.granularity,
            screened.bound,
            rank,
            run,
            assumes,
            screened.prepare_s + spent,
            screened.screen,
            screened.run_s,
        )

    def screened_first(plan: Plan, ranked: list[tuple[int, int]]) -> list[tuple[int, Screened]]:
        """``ranked`` (rank, domains) at ``plan``, each prepared and screened against the
        best so far, in the order of their screened times: the likeliest best then runs
        first, and its completion rules most others out by their screens alone. Only the
        likeliest best keeps its prepared run, and only while no run is in flight (at most
        two prepared runs are held, as with ``threads`` 2); the others are prepared again
        if they must run. Empty if there is no best yet or the engine has no screen."""
        deadline = runs.deadline()
        model = Scenario(pod, plan, size, configuration, engine=engine).engine_model
        if deadline is None or not getattr(model, "screens", False):
            return []
        order: list[tuple[int, int, Screened]] = []
        likeliest = -1
        keep = not runs.pending
        for rank, domains in ranked:
            placement, prepared, spent = prepare(plan, domains)
            bound, granularity = prepared.skip_bound_ps, placement.granularity
            assert prepared.screen is not None, f"{model.name} screens, but not this run"
            if bound > deadline:  # beaten by its bound: it will be skipped
                order.append((_LAST, rank, Screened(None, bound, granularity, spent, 0.0)))
                continue
            started = time.thread_time()
            estimate = prepared.screen(deadline)
            screened = Screened(estimate, bound, granularity, spent, time.thread_time() - started)
            if keep and estimate is not None and (likeliest < 0 or estimate < order[likeliest][0]):
                if likeliest >= 0:  # no longer the likeliest: drop its prepared run
                    at, known_rank, known = order[likeliest]
                    order[likeliest] = (at, known_rank, replace(known, kept=None))
                likeliest = len(order)
                screened = replace(screened, kept=prepared)
            order.append((_LAST if estimate is None else estimate, rank, screened))
            del placement, prepared
        order.sort(key=lambda item: (item[0], item[1]))
        return [(rank, screened) for _, rank, screened in order]

    def granularity_round(best: tuple[Plan, SimResult, int], speculative: bool = False) -> None:
        # Every other granularity ``auto`` may use, at the best count.
        # They rank after every count, in ``auto_granularities``'s order.
        plan, _, chosen = best
        estimated[:] = [chosen]
        ranked = [
            (rank, domains)
            for rank, domains in enumerate(auto_granularities(pod.socket), start=len(counts))
            if domains != chosen
        ]
        screened = screened_first(plan, ranked)
        if not screened:
            for rank, domains in ranked:
                attempt(plan, domains, rank, assumes=plan if speculative else None)
        while screened:  # each let go once offered: a kept prepared run lives no longer
            rank, known = screened.pop(0)
            attempt(plan, known.granularity, rank, plan if speculative else None, known)
            del known

    def screens(plan: Plan) -> bool:
        """Whether the engine ``plan`` runs on at this size has a screen to rank by."""
        model = Scenario(pod, plan, size, configuration, engine=engine).engine_model
        return bool(getattr(model, "screens", False))

    def ranked_round(best: tuple[Plan, SimResult, int]) -> None:
        # The fast search's granularity round: every granularity ``auto`` may use, the
        # best's included, screened by the engine's cheaper run (each screen stopped once
        # it passes the least screened time so far by the screen's margin); only the least
        # then runs, if it is not the best already.
        plan, result, chosen = best
        estimated[:] = [chosen]
        count = plan.threadblocks_per_gpu[0]
        limit = result.completion_ps  # a screen past it by its margin cannot be the least
        times: dict[int, int] = {}
        for domains in auto_granularities(pod.socket):
            if progress:
                progress(f"{configuration}, {count} threadblocks, {domains} domains (screened)")
            placement, prepared, spent = prepare(plan, domains)
            assert prepared.screen is not None, "the engine screens, but not this run"
            started = time.thread_time()
            # A bound past the best rules it out exactly, with no screen.
            beaten = domains != chosen and prepared.skip_bound_ps > result.completion_ps
            screened_ps = None if beaten else prepared.screen(limit)
            del placement, prepared
            runs.costs.append(
                CandidateCost(count, domains, "ranked", spent, time.thread_time() - started)
            )
            ranked.append((count, domains, -1 if screened_ps is None else screened_ps))
            if screened_ps is not None:
                times[domains] = screened_ps
                limit = min(limit, screened_ps)
        if not times:  # every screen past the best: it stays
            return
        order = auto_granularities(pod.socket)
        pick = min(times, key=lambda domains: (times[domains], order.index(domains)))
        if pick != chosen:
            attempt(plan, pick, len(counts) + order.index(pick))
            runs.settle()

    counts = (base.threadblocks_per_gpu[0],) if fixed else candidate_counts(base.ngpus)
    ranked: list[tuple[int, int, int]] = []  # the fast round's screens
    ranks = False  # whether the fast search ranked the granularities by screens
    estimated: list[int] = []  # the estimate's granularity at the best count
    # The joint search runs every granularity at every count; ranks follow the exhaustive
    # order, count by count, so that the first of equally fast runs wins.
    granularities = auto_granularities(pod.socket) if joint else (configuration.granularity,)
    try:
        for rank in reversed(range(len(counts))):  # the largest first: see the module
            try:
                plan = base if fixed else builtin_plan(plan_name, gpus=gpus, tbs=counts[rank])
            except ConfigError:  # a count the algorithm cannot split its work over
                continue
            for index, domains in enumerate(granularities):
                attempt(plan, domains, rank * len(granularities) + index)
        if fast and searched:
            best = runs.settle()
            if best is None:
                raise ValueError(f"no threadblock count works for {plan_name}")
            ranks = screens(best[0])
            if ranks:
                ranked_round(best)
                best = runs.settle()
        # With runs in flight, the granularity round starts on the best so far while the
        # last count runs: its candidates count only if that stays the best (``assumes``);
        # if not, the round is run again for the best.
        provisional = runs.settle(keep=max(threads - 1, 0)) if threads and not fast else None
        rounds = searched and not joint and not (fast and ranks)
        speculated = rounds and provisional is not None and bool(runs.pending)
        if speculated:
            granularity_round(provisional, speculative=True)
        best = runs.settle()
        if best is None:
            raise ValueError(f"no threadblock count works for {plan_name}")
        if rounds and (not speculated or best[0] is not provisional[0]):
            granularity_round(best)
            best = runs.settle()
    finally:
        runs.close()
    assert best is not None
    found = BestRun(
        best[0],
        best[1],
        best[2],
        tuple(runs.tried),
        tuple(runs.skipped),
        tuple(runs.cut),
        tuple(runs.costs),
        tuple(runs.screened),
        estimated[0] if estimated else None,
        tuple(ranked),
        search,
    )
    _CACHE[key] = found
    return found
