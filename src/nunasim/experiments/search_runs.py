"""The candidates of a threadblock search as it settles them: each prepared candidate is
offered in the search's order and settled exactly as a one-at-a-time search would settle
it (tried, skipped by its bound, cut at the best so far, screened out by its engine's
cheaper run, or void), whether its run went on here or in another thread; and what each
cost. ``tbsearch`` decides which candidates to offer and in which order."""

from __future__ import annotations

import contextvars
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from nunasim.collectives.plan import Plan
from nunasim.engine.base import PreparedRun
from nunasim.engine.result import SimResult


@dataclass(frozen=True)
class CandidateCost:
    """One candidate of a search: its verdict (``tried``, ``skipped``, ``cut``, ``screened``
    or ``void``) and the CPU seconds of the thread that placed and lowered it
    (``prepare_s``) and ran or screened it (``run_s``, 0 when it was neither)."""

    threadblocks: int
    domains: int
    verdict: str
    prepare_s: float
    run_s: float


@dataclass(frozen=True)
class Screened:
    """A candidate prepared and screened ahead of its turn: its screened time (None: past
    the deadline it was screened against), its skip bound and granularity, the CPU seconds
    of preparing and screening it, and (for the likeliest best) its prepared run, kept."""

    estimate: int | None
    bound: int
    granularity: int
    prepare_s: float
    run_s: float
    kept: PreparedRun | None = None

    def screen(self, deadline_ps: int) -> int | None:
        """The screen's answer for a deadline no later than the one it was screened against
        (the best only improves)."""
        return None if self.estimate is None or self.estimate > deadline_ps else self.estimate


def never_run(deadline_ps: int | None) -> SimResult | None:
    """The run of a candidate whose screen has ruled it out: never called."""
    raise AssertionError(f"a screened-out candidate was run (deadline {deadline_ps})")


@dataclass
class Candidate:
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
    screened: list[bool] | None = None  # set when its screen ruled the run out


class SearchRuns:
    """The candidates in order, each either run, skipped or cut exactly as a one-at-a-time
    search would: a candidate is skipped when its bound shows it cannot beat the best
    completion of the candidates before it, and cut when it runs past that completion.
    With ``threads`` 0 each runs here as soon as it is prepared; otherwise up to ``threads``
    runs go on in other threads while this one prepares the next candidates (the engines'
    compiled loops release the GIL). A run started before the runs ahead of it ended has
    only the best known then as its deadline; once they have settled it is judged against
    their best, as the one-at-a-time search would have judged it: the answer, ``tried``,
    ``skipped`` and ``cut`` do not depend on ``threads``.

    With ``to_the_end`` no candidate is skipped, cut or screened: every one runs to its
    end, so ``tried`` has every completion (a search whose report compares them all)."""

    def __init__(self, threads: int, to_the_end: bool = False) -> None:
        self.threads = threads
        self.to_the_end = to_the_end
        self.pool = ThreadPoolExecutor(threads) if threads > 0 else None
        self.pending: deque[Candidate] = deque()  # in flight, in candidate order
        self.tried: list[tuple[int, int, int]] = []
        self.skipped: list[tuple[int, int, int]] = []
        self.cut: list[tuple[int, int, int]] = []
        self.screened: list[tuple[int, int, int]] = []
        self.costs: list[CandidateCost] = []
        self.best: tuple[Plan, SimResult, int] | None = None
        self.best_rank = -1

    def _void(self, candidate: Candidate) -> bool:
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

    def _beaten(self, candidate: Candidate) -> bool:
        # The best only improves as runs end, so a bound it beats now stays beaten.
        return not self.to_the_end and not self._wins(candidate.bound, candidate.rank)

    def deadline(self) -> int | None:
        """A run that passes this time unfinished cannot win (the best only improves);
        None while there is no best, and always with ``to_the_end``."""
        return None if self.best is None or self.to_the_end else self.best[1].completion_ps

    def offer(
        self,
        plan: Plan,
        domains: int,
        bound: int,
        rank: int,
        run: Callable[[int | None], SimResult | None],
        assumes: Plan | None = None,
        prepare_s: float = 0.0,
        screen: Callable[[int], int | None] | None = None,
        run_s: float = 0.0,
    ) -> None:
        """Queue a prepared candidate; its run starts unless what has settled already rules
        it out, and it is settled (tried, skipped, cut, screened or void) in its turn."""
        count = plan.threadblocks_per_gpu[0]
        candidate = Candidate(
            plan, count, domains, bound, rank, None, assumes, prepare_s, [run_s], [False]
        )
        self.make_room()
        # A void verdict is final only once every candidate before it has settled; a
        # beaten one stays beaten, since the best only improves.
        if not (self._beaten(candidate) or (not self.pending and self._void(candidate))):
            screened = screened_run(run, screen, candidate.screened)
            candidate.future = self._start(timed_run(screened, candidate.run_s), self.deadline())
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

    def _verdict(self, candidate: Candidate) -> str:
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
        assert candidate.screened is not None
        if candidate.screened[0]:  # judged against a deadline no earlier than this one
            assert deadline is not None
            self.screened.append((candidate.count, candidate.domains, deadline))
            return "screened"
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


def screened_run(
    run: Callable[[int | None], SimResult | None],
    screen: Callable[[int], int | None] | None,
    ruled_out: list[bool],
) -> Callable[[int | None], SimResult | None]:
    """``run``, but first, given a deadline, ``screen``: None, and ``ruled_out[0]`` set,
    when the screen judges the run to end after it."""
    if screen is None:
        return run

    def screened(deadline_ps: int | None) -> SimResult | None:
        if deadline_ps is not None:
            estimate = screen(deadline_ps)
            if estimate is None or estimate > deadline_ps:
                ruled_out[0] = True
                return None
        return run(deadline_ps)

    return screened


def timed_run(
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
