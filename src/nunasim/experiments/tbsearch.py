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

Both save most when the best is found early, so the counts are tried from the largest
down: the large collectives that cost most are fastest with many threadblocks, and the
few threadblocks per peer that lose there are window-bound runs several times longer,
which the deadline stops early.

With ``granularity="auto"`` there are two searches (``SEARCHES``):

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

A configuration with one granularity (no domains, or a granularity given) has one search.
Results are cached per process, keyed by everything that decides the run.
"""

from __future__ import annotations

import contextvars
import os
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from nunasim.collectives.builtins import builtin_plan
from nunasim.collectives.plan import Plan
from nunasim.engine.result import SimResult
from nunasim.errors import ConfigError
from nunasim.hardware import Pod
from nunasim.policies.place import auto_granularities
from nunasim.scenario import Configuration, Scenario, as_configuration
from nunasim.units import format_time

# The most threadblocks per GPU a search tries: the paper's range (its Fig. 13).
SEARCH_MAX_THREADBLOCKS_PER_GPU = 1008
# The searches over threadblock counts and NAR granularities (see the module's text).
SEARCHES = ("staged", "joint")
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

    @property
    def threadblocks(self) -> int:
        """Threadblocks per GPU of the fastest run."""
        return self.plan.threadblocks_per_gpu[0]


@dataclass(frozen=True)
class CandidateCost:
    """One candidate of a search: its verdict (``tried``, ``skipped``, ``cut`` or ``void``)
    and the CPU seconds of the thread that placed and lowered it (``prepare_s``) and ran
    it (``run_s``, 0 when it was not run)."""

    threadblocks: int
    domains: int
    verdict: str
    prepare_s: float
    run_s: float


_CACHE: dict[tuple, BestRun] = {}


@dataclass
class _Candidate:
    """A prepared candidate, and its run's future while it is in flight."""

    plan: Plan
    count: int
    domains: int  # the granularity its placement chose
    bound: int  # its lower bound, ps
    rank: int  # its place in the exhaustive search's order: the first of equals wins
    future: Future[SimResult | None] | None = None
    # a candidate of the granularity round offered before the count round had settled:
    # it counts only if this plan (the round's plan) is still the best when it settles
    assumes: Plan | None = None
    prepare_s: float = 0.0
    run_s: list[float] | None = None  # set by the run, in whichever thread it ran


class _Search:
    """The candidates in order, each either run, skipped or cut exactly as a one-at-a-time
    search would: a candidate is skipped when its bound shows it cannot beat the best
    completion of the candidates before it, and cut when it runs past that completion.
    With ``threads`` 0 each runs here as soon as it is prepared; otherwise up to ``threads``
    runs go on in other threads while this one prepares the next candidates (the engines'
    compiled loops release the GIL). A run started before the runs ahead of it ended has
    only the best known then as its deadline; once they have settled it is judged against
    their best, as the one-at-a-time search would have judged it: the answer, ``tried``,
    ``skipped`` and ``cut`` do not depend on ``threads``."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.pool = ThreadPoolExecutor(threads) if threads > 0 else None
        self.pending: deque[_Candidate] = deque()  # in flight, in candidate order
        self.tried: list[tuple[int, int, int]] = []
        self.skipped: list[tuple[int, int, int]] = []
        self.cut: list[tuple[int, int, int]] = []
        self.costs: list[CandidateCost] = []
        self.best: tuple[Plan, SimResult, int] | None = None
        self.best_rank = -1

    def _void(self, candidate: _Candidate) -> bool:
        # Offered for a plan that, once every candidate before it settled, is not the best.
        return candidate.assumes is not None and (
            self.best is None or self.best[0] is not candidate.assumes
        )

    def _wins(self, completion_ps: int, rank: int) -> bool:
        """Whether a run of this completion and rank would beat the best so far."""
        if self.best is None:
            return True
        best = self.best[1].completion_ps
        return completion_ps < best or (completion_ps == best and rank < self.best_rank)

    def _beaten(self, candidate: _Candidate) -> bool:
        # The best only improves as runs end, so a bound it beats now stays beaten.
        return not self._wins(candidate.bound, candidate.rank)

    def deadline(self) -> int | None:
        """A run that passes this time unfinished cannot win (the best only improves)."""
        return None if self.best is None else self.best[1].completion_ps

    def offer(
        self,
        plan: Plan,
        domains: int,
        bound: int,
        rank: int,
        run: Callable[[int | None], SimResult | None],
        assumes: Plan | None = None,
        prepare_s: float = 0.0,
    ) -> None:
        """Queue a prepared candidate; its run starts unless what has settled already rules
        it out, and it is settled (tried, skipped, cut or void) in its turn."""
        count = plan.threadblocks_per_gpu[0]
        candidate = _Candidate(plan, count, domains, bound, rank, None, assumes, prepare_s, [0.0])
        self.make_room()
        # A void verdict is final only once every candidate before it has settled; a
        # beaten one stays beaten, since the best only improves.
        if not (self._beaten(candidate) or (not self.pending and self._void(candidate))):
            candidate.future = self._start(_timed(run, candidate.run_s), self.deadline())
        self.pending.append(candidate)
        if self.pool is None:
            self.settle()

    def _start(
        self, run: Callable[[int | None], SimResult | None], deadline_ps: int | None
    ) -> Future[SimResult | None]:
        if self.pool is None:  # one at a time: run here, now
            done: Future[SimResult | None] = Future()
            done.set_result(run(deadline_ps))
            return done
        context = contextvars.copy_context()  # the memory budget, for instance
        return self.pool.submit(context.run, run, deadline_ps)

    def make_room(self) -> None:
        """Wait until fewer than ``threads`` runs are in flight: called before a candidate
        is prepared, so that no more than ``threads`` prepared runs are held at once."""
        while self.pool is not None and len(self.pending) >= self.threads:
            self._settle_oldest()

    def _settle_oldest(self) -> None:
        candidate = self.pending.popleft()
        verdict = self._verdict(candidate)
        assert candidate.run_s is not None
        self.costs.append(
            CandidateCost(
                candidate.count, candidate.domains, verdict, candidate.prepare_s, candidate.run_s[0]
            )
        )

    def _verdict(self, candidate: _Candidate) -> str:
        if candidate.future is None:  # never started: beaten, or void
            if self._void(candidate):
                return "void"
            self.skipped.append((candidate.count, candidate.domains, candidate.bound))
            return "skipped"
        result = candidate.future.result()
        if self._void(candidate):
            return "void"
        if self._beaten(candidate):
            self.skipped.append((candidate.count, candidate.domains, candidate.bound))
            return "skipped"
        deadline = self.deadline()
        # Cut, or (started before the best ahead of it was known) past the deadline the
        # one-at-a-time search would have given it.
        if result is None or (deadline is not None and result.completion_ps > deadline):
            assert deadline is not None  # a run without a deadline always finishes
            self.cut.append((candidate.count, candidate.domains, deadline))
            return "cut"
        self.tried.append((candidate.count, candidate.domains, result.completion_ps))
        if self._wins(result.completion_ps, candidate.rank):
            self.best = (candidate.plan, result, candidate.domains)
            self.best_rank = candidate.rank
        return "tried"

    def settle(self, keep: int = 0) -> tuple[Plan, SimResult, int] | None:
        """Wait until at most ``keep`` runs are in flight; the best of those settled."""
        while len(self.pending) > keep:
            self._settle_oldest()
        return self.best

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _timed(
    run: Callable[[int | None], SimResult | None], seconds: list[float]
) -> Callable[[int | None], SimResult | None]:
    """``run``, adding the CPU seconds of the thread it runs in to ``seconds[0]``."""

    def timed(deadline_ps: int | None) -> SimResult | None:
        started = time.thread_time()
        try:
            return run(deadline_ps)
        finally:
            seconds[0] += time.thread_time() - started

    return timed


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
    candidate threadblock counts, which replace any ``tbs=`` of the name; ``granularity``,
    when given, replaces the configuration's. ``threads``: runs that may go on at once in
    other threads while this one prepares the next candidates (0: one at a time, here);
    the answer is the same. ``search``: ``staged`` or ``joint`` (see the module's text)."""
    if search not in SEARCHES:
        raise ConfigError(f"unknown search {search!r} (known: {', '.join(SEARCHES)})")
    configuration = as_configuration(config, granularity)
    searched = configuration.granularity == "auto" and configuration.uses_domains
    joint = searched and search == "joint"
    key = (pod, plan_name, gpus, size, configuration, seed, layout, engine, joint)
    if key in _CACHE:
        return _CACHE[key]
    base = builtin_plan(plan_name, gpus=gpus)
    runs = _Search(threads)

    def attempt(plan: Plan, domains: int | str, rank: int, assumes: Plan | None = None) -> None:
        if progress:
            settled = len(runs.tried) + len(runs.skipped) + len(runs.cut)
            best = runs.best[1].completion_ps if runs.best is not None else None
            so_far = f", best so far {format_time(best)}" if best is not None else ""
            progress(
                f"{configuration}, {plan.threadblocks_per_gpu[0]} threadblocks, {domains} "
                f"domains (candidate {settled + len(runs.pending) + 1}{so_far})"
            )
        runs.make_room()
        started = time.thread_time()
        scenario = Scenario(
            pod, plan, size, configuration, domains, seed, layout=layout, engine=engine
        )
        placement = scenario.placement()
        prepared = scenario.prepare(placement)
        spent = time.thread_time() - started
        runs.offer(
            plan, placement.granularity, prepared.skip_bound_ps, rank, prepared.run, assumes, spent
        )

    def granularity_round(best: tuple[Plan, SimResult, int], speculative: bool = False) -> None:
        # Every other granularity ``auto`` may use, at the best count.
        # They rank after every count, in ``auto_granularities``'s order.
        plan, _, chosen = best
        for rank, domains in enumerate(auto_granularities(pod.socket), start=len(counts)):
            if domains != chosen:
                attempt(plan, domains, rank, assumes=plan if speculative else None)

    counts = candidate_counts(base.ngpus)
    # The joint search runs every granularity at every count; ranks follow the exhaustive
    # order, count by count, so that the first of equally fast runs wins.
    granularities = auto_granularities(pod.socket) if joint else (configuration.granularity,)
    try:
        for rank in reversed(range(len(counts))):  # the largest first: see the module
            try:
                plan = builtin_plan(plan_name, gpus=gpus, tbs=counts[rank])
            except ConfigError:  # a count the algorithm cannot split its work over
                continue
            for index, domains in enumerate(granularities):
                attempt(plan, domains, rank * len(granularities) + index)
        # With runs in flight, the granularity round starts on the best so far while the
        # last count runs: its candidates count only if that stays the best (``assumes``);
        # if not, the round is run again for the best.
        provisional = runs.settle(keep=max(threads - 1, 0)) if threads else None
        rounds = searched and not joint
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
    )
    _CACHE[key] = found
    return found
