"""The threadblock search skips a candidate only when its lower bound shows it cannot win,
so its answer is the exhaustive search's."""

import json

import pytest

from nunasim.collectives.builtins import builtin_plan
from nunasim.experiments import tbsearch
from nunasim.experiments.tbsearch import best_threadblocks, candidate_counts
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario

LIMIT = 48


@pytest.mark.parametrize(
    ("collective", "gpus", "size", "config", "engine"),
    [
        ("allgather", 4, 100_000, "UA", "packet"),
        ("allgather", 4, 100_000, "NAP+NAR", "packet"),
        ("alltoall", 4, 1_000_000, "NUMA+NAR", "flow"),
    ],
)
def test_skipped_candidates_could_not_have_won(collective, gpus, size, config, engine, monkeypatch):
    # Up to 48 threadblocks per GPU (5 counts) keeps the test short; the rule is the same.
    monkeypatch.setattr(tbsearch, "candidate_counts", lambda n: candidate_counts(n, LIMIT))
    pod = load_preset("nextgen-4die").fit(gpus).pod
    tbsearch._CACHE.clear()
    found = best_threadblocks(pod, collective, size, config, gpus=gpus, engine=engine)
    best = found.result.completion_ps
    assert found.skipped, "the case should exercise the skipping"
    ran = {(count, domains) for count, domains, _ in found.tried}
    for count, domains, bound in found.skipped:
        assert (count, domains) not in ran
        plan = builtin_plan(collective, gpus=gpus, tbs=count)
        result = Scenario(pod, plan, size, config, domains, engine=engine).run()
        assert result.lower_bound_ps == bound
        assert result.completion_ps >= bound >= best
    # Every candidate count was either run or skipped, none lost.
    counts = {count for count, _, _ in found.tried} | {count for count, _, _ in found.skipped}
    assert counts >= set(candidate_counts(gpus, LIMIT))
    # and the exhaustive search agrees
    exhaustive = min(
        Scenario(pod, builtin_plan(collective, gpus=gpus, tbs=count), size, config, engine=engine)
        .run()
        .completion_ps
        for count in candidate_counts(gpus, LIMIT)
    )
    assert best <= exhaustive


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("collective", "gpus", "size", "config", "engine"),
    [
        ("allgather", 4, 100_000, "NAP+NAR", "packet"),
        ("alltoall", 4, 1_000_000, "NUMA+NAR", "flow"),
    ],
)
def test_runs_in_threads_change_nothing(
    collective, gpus, size, config, engine, threads, monkeypatch
):
    # Runs in flight beside the preparation of the next candidates, some of them started
    # before the runs ahead ended: the same answer, and the same runs tried and skipped.
    monkeypatch.setattr(tbsearch, "candidate_counts", lambda n: candidate_counts(n, LIMIT))
    pod = load_preset("nextgen-4die").fit(gpus).pod
    found = {}
    for n in (0, threads):
        tbsearch._CACHE.clear()
        found[n] = best_threadblocks(
            pod, collective, size, config, gpus=gpus, engine=engine, threads=n
        )
    alone, threaded = found[0], found[threads]
    assert threaded.tried == alone.tried
    assert threaded.skipped == alone.skipped
    assert threaded.granularity == alone.granularity
    assert threaded.threadblocks == alone.threadblocks
    assert threaded.result.completion_ps == alone.result.completion_ps
    # the same summary but for the wall time (as JSON: a field the flow engine does not
    # give is NaN in both)
    assert _model_summary(threaded) == _model_summary(alone)


def _model_summary(found) -> str:
    summary = {k: v for k, v in found.result.summary().items() if k != "wall_s"}
    return json.dumps(summary, sort_keys=True, default=str)


def test_a_run_started_early_and_then_beaten_counts_as_skipped():
    # A (bound 100, completes 500) and B (120, 300) run at once; C (bound 400) is started
    # while B is in flight, since A's 500 cannot rule it out, but B's 300 does: one at a
    # time it would have been skipped, and so it is here.
    from types import SimpleNamespace

    search = tbsearch._Search(2)
    ran = []

    def candidate(count, completion):
        def run():
            ran.append(count)
            return SimpleNamespace(completion_ps=completion)

        return SimpleNamespace(threadblocks_per_gpu=(count,)), run

    try:
        for count, bound, completion in [(1, 100, 500), (2, 120, 300), (4, 400, 450)]:
            plan, run = candidate(count, completion)
            search.offer(plan, 1, bound, run)
        best = search.settle()
    finally:
        search.close()
    assert sorted(ran) == [1, 2, 4]  # C did run, early
    assert search.tried == [(1, 1, 500), (2, 1, 300)]
    assert search.skipped == [(4, 1, 400)]
    assert best[1].completion_ps == 300
    alone = tbsearch._Search(0)
    for count, bound, completion in [(1, 100, 500), (2, 120, 300), (4, 400, 450)]:
        plan, run = candidate(count, completion)
        alone.offer(plan, 1, bound, run)
    assert (alone.tried, alone.skipped) == (search.tried, search.skipped)


def test_a_granularity_round_started_on_a_best_later_beaten_is_void():
    # The count round's A (completes 500) settles first and B (300) is still running when
    # the granularity round starts on A; B wins, so the round's runs for A count for
    # nothing (neither tried nor skipped): the round is then run for B, as one at a time.
    from types import SimpleNamespace

    search = tbsearch._Search(2)
    a = SimpleNamespace(threadblocks_per_gpu=(1,))
    b = SimpleNamespace(threadblocks_per_gpu=(2,))

    def done(completion):
        return lambda: SimpleNamespace(completion_ps=completion)

    try:
        search.offer(a, 1, 100, done(500))
        search.offer(b, 1, 120, done(300))
        provisional = search.settle(keep=1)
        assert provisional[0] is a
        search.offer(a, 4, 150, done(250), assumes=a)  # would win, but A is not the best
        best = search.settle()
    finally:
        search.close()
    assert best[0] is b and best[1].completion_ps == 300
    assert search.tried == [(1, 1, 500), (2, 1, 300)]
    assert search.skipped == []
