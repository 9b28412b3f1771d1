"""The threadblock search skips a candidate only when its lower bound shows it cannot win,
and cuts a run short only once it is past the best completion before it, so its answer is
the exhaustive search's."""

import json

import pytest

from nunasim.collectives.builtins import builtin_plan
from nunasim.errors import ConfigError
from nunasim.experiments import tbsearch
from nunasim.experiments.search_runs import SearchRuns
from nunasim.experiments.tbsearch import best_threadblocks, candidate_counts
from nunasim.io.presets import load_preset
from nunasim.policies.place import auto_granularities
from nunasim.scenario import Scenario

LIMIT = 48


def _short_searches(monkeypatch, gpus):
    """The pod of ``gpus`` GPUs, with searches of up to 48 threadblocks per GPU (5 counts on
    8 GPUs), which keeps a test short; the rules are the same. The search cache is empty."""
    monkeypatch.setattr(tbsearch, "candidate_counts", lambda n: candidate_counts(n, LIMIT))
    tbsearch._CACHE.clear()
    return load_preset("nextgen-4die").fit(gpus).pod


@pytest.mark.parametrize(
    ("collective", "gpus", "size", "config", "engine"),
    [
        ("allgather", 4, 100_000, "UA", "packet"),
        ("allgather", 4, 1_000_000, "UA", "packet"),
        ("allgather", 4, 1_000_000, "NAP+NAR", "packet"),
        ("alltoall", 4, 1_000_000, "NUMA+NAR", "flow"),
        ("allgather", 4, 4_000_000, "UA", "flow"),
    ],
)
def test_skipped_and_cut_candidates_could_not_have_won(
    collective, gpus, size, config, engine, monkeypatch
):
    pod = _short_searches(monkeypatch, gpus)
    found = best_threadblocks(pod, collective, size, config, gpus=gpus, engine=engine)
    best = found.result.completion_ps
    assert found.cut or found.skipped or found.screened, "the case should rule some out"
    ran = {(count, domains) for count, domains, _ in found.tried}

    def full_run(count, domains):
        plan = builtin_plan(collective, gpus=gpus, tbs=count)
        return Scenario(pod, plan, size, config, domains, engine=engine).run()

    for count, domains, bound in found.skipped:
        assert (count, domains) not in ran
        result = full_run(count, domains)
        assert result.lower_bound_ps == bound
        assert result.completion_ps >= bound >= best
    for count, domains, deadline in [*found.cut, *found.screened]:
        assert (count, domains) not in ran
        assert full_run(count, domains).completion_ps > deadline >= best
    # Every candidate count was run, skipped, cut or screened, none lost.
    settled = [*found.tried, *found.skipped, *found.cut, *found.screened]
    assert {count for count, _, _ in settled} >= set(candidate_counts(gpus, LIMIT))
    # and the exhaustive search, in ascending order, agrees: the same time at the same count
    counts = candidate_counts(gpus, LIMIT)
    times = [
        Scenario(pod, builtin_plan(collective, gpus=gpus, tbs=count), size, config, engine=engine)
        .run()
        .completion_ps
        for count in counts
    ]
    if config.endswith("+NAR"):  # the granularity round may still improve on the counts
        assert best <= min(times)
    else:
        assert best == min(times)
        assert found.threadblocks == counts[times.index(best)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("collective", "gpus", "size", "config", "engine"),
    [
        ("allgather", 4, 100_000, "NAP+NAR", "packet"),
        ("alltoall", 4, 1_000_000, "NUMA+NAR", "flow"),
        ("allgather", 8, 10_000_000, "NAP+NAR", "flow"),  # screens, in the round too
    ],
)
def test_runs_in_threads_change_nothing(
    collective, gpus, size, config, engine, threads, monkeypatch
):
    # Runs in flight beside the preparation of the next candidates, some of them started
    # before the runs ahead ended: the same answer, and the same runs tried and skipped.
    pod = _short_searches(monkeypatch, gpus)
    found = {}
    for n in (0, threads):
        tbsearch._CACHE.clear()
        found[n] = best_threadblocks(
            pod, collective, size, config, gpus=gpus, engine=engine, threads=n
        )
    alone, threaded = found[0], found[threads]
    if collective == "allgather" and engine == "flow":
        assert alone.screened, "the case should screen candidates out"
    assert threaded.tried == alone.tried
    assert threaded.skipped == alone.skipped
    assert threaded.cut == alone.cut
    assert threaded.screened == alone.screened
    assert threaded.granularity == alone.granularity
    assert threaded.threadblocks == alone.threadblocks
    assert threaded.result.completion_ps == alone.result.completion_ps
    # the same summary but for the wall time (as JSON: a field the flow engine does not
    # give is NaN in both)
    assert _model_summary(threaded) == _model_summary(alone)


def _model_summary(found) -> str:
    summary = {k: v for k, v in found.result.summary().items() if k != "wall_s"}
    return json.dumps(summary, sort_keys=True, default=str)


def _fake(count, completion, ran=None):
    """A plan of ``count`` threadblocks and a run of it that completes at ``completion``
    and, like the engines, gives up past a deadline it cannot meet."""
    from types import SimpleNamespace

    def run(deadline_ps):
        if ran is not None:
            ran.append(count)
        if deadline_ps is not None and completion > deadline_ps:
            return None
        return SimpleNamespace(completion_ps=completion)

    return SimpleNamespace(threadblocks_per_gpu=(count,)), run


def _offer_all(search, candidates):
    # (count, bound, rank, completion), offered in this order
    for count, bound, rank, completion in candidates:
        plan, run = _fake(count, completion, search.ran)
        search.offer(plan, 1, bound, rank, run)
    return search.settle()


def _searches(candidates):
    found = {}
    for threads in (0, 2):
        search = SearchRuns(threads)
        search.ran = []
        try:
            best = _offer_all(search, candidates)
        finally:
            search.close()
        found[threads] = (search, best)
    return found


def test_a_run_started_early_and_then_beaten_counts_as_skipped():
    # A (bound 100, completes 500) and B (120, 300) run at once; C (bound 400) is started
    # while B is in flight, since A's 500 cannot rule it out, but B's 300 does: one at a
    # time it would have been skipped, and so it is here.
    found = _searches([(1, 100, 0, 500), (2, 120, 1, 300), (4, 400, 2, 450)])
    search, best = found[2]
    assert sorted(search.ran) == [1, 2, 4]  # C did run, early
    assert search.tried == [(1, 1, 500), (2, 1, 300)]
    assert search.skipped == [(4, 1, 400)]
    assert best[1].completion_ps == 300
    alone, _ = found[0]
    assert alone.ran == [1, 2]  # one at a time C is not run at all
    assert (alone.tried, alone.skipped, alone.cut) == (search.tried, search.skipped, search.cut)


def test_a_run_past_the_best_before_it_is_cut_in_threads_too():
    # A completes at 300; B (bound 100) would complete at 450. One at a time B runs with
    # A's 300 as its deadline and is stopped; in threads it starts beside A with no
    # deadline and finishes, and is then judged against A's 300: cut all the same.
    found = _searches([(8, 50, 3, 300), (4, 100, 2, 450)])
    for search, best in found.values():
        assert search.tried == [(8, 1, 300)]
        assert search.cut == [(4, 1, 300)]
        assert search.skipped == []
        assert best[1].completion_ps == 300


def test_a_screened_run_is_not_run_and_counts_as_screened():
    # A completes at 300. B's screen judges it to end after 300, so its run is never
    # started; C passes its screen and is run; A, offered with no deadline, is not screened.
    screens = []

    def screen(count, verdict):
        def judge(deadline_ps):  # an estimate at the deadline, or None: it would end later
            screens.append((count, deadline_ps))
            return deadline_ps if verdict else None

        return judge

    search = SearchRuns(0)
    ran = []
    for count, bound, rank, completion, verdict in (
        (8, 50, 3, 300, True),
        (4, 100, 2, 450, False),
        (2, 100, 1, 250, True),
    ):
        plan, run = _fake(count, completion, ran)
        search.offer(plan, 1, bound, rank, run, screen=screen(count, verdict))
    best = search.settle()
    assert ran == [8, 2]  # the first has no deadline to screen against
    assert screens == [(4, 300), (2, 300)]
    assert search.screened == [(4, 1, 300)]
    assert search.tried == [(8, 1, 300), (2, 1, 250)]
    assert search.cut == []
    assert best[1].completion_ps == 250
    assert [c.verdict for c in search.costs] == ["tried", "screened", "tried"]


def test_equal_runs_go_to_the_first_in_the_exhaustive_order():
    # Tried from the largest count down, the smaller of two equally fast counts still wins,
    # as the ascending exhaustive search would have it; a bound equal to the best rules out
    # only a candidate that would rank after it.
    found = _searches([(8, 50, 3, 300), (16, 300, 4, 300), (2, 100, 1, 300), (1, 300, 0, 300)])
    for search, best in found.values():
        assert best[0].threadblocks_per_gpu == (1,)
        assert search.skipped == [(16, 1, 300)]
        assert search.tried == [(8, 1, 300), (2, 1, 300), (1, 1, 300)]
        assert search.cut == []


def test_a_granularity_round_started_on_a_best_later_beaten_is_void():
    # The count round's A (completes 500) settles first and B (300) is still running when
    # the granularity round starts on A; B wins, so the round's runs for A count for
    # nothing (neither tried nor skipped nor cut): the round is then run for B, as one at a
    # time.
    search = SearchRuns(2)
    a, run_a = _fake(1, 500)
    b, run_b = _fake(2, 300)
    _, run_a4 = _fake(1, 250)
    try:
        search.offer(a, 1, 100, 0, run_a)
        search.offer(b, 1, 120, 1, run_b)
        provisional = search.settle(keep=1)
        assert provisional[0] is a
        search.offer(a, 4, 150, 2, run_a4, assumes=a)  # would win, but A is not the best
        best = search.settle()
    finally:
        search.close()
    assert best[0] is b and best[1].completion_ps == 300
    assert search.tried == [(1, 1, 500), (2, 1, 300)]
    assert search.skipped == [] and search.cut == []


@pytest.mark.parametrize(
    ("collective", "gpus", "size", "config", "engine"),
    [
        ("alltoall", 2, 100_000, "NAP+NAR", "packet"),
        ("allgather", 4, 1_000_000, "UA+NAR", "packet"),
        ("alltoall", 2, 4_000_000, "NAP+NAR", "flow"),
    ],
)
def test_the_joint_search_is_the_exhaustive_search_over_counts_and_granularities(
    collective, gpus, size, config, engine, monkeypatch
):
    pod = _short_searches(monkeypatch, gpus)
    joint = best_threadblocks(
        pod, collective, size, config, gpus=gpus, engine=engine, search="joint"
    )
    staged = best_threadblocks(pod, collective, size, config, gpus=gpus, engine=engine)
    # Every pair, in the exhaustive order: counts ascending, each with every granularity.
    pairs = [
        (count, domains)
        for count in candidate_counts(gpus, LIMIT)
        for domains in auto_granularities(pod.socket)
    ]
    times = [
        Scenario(
            pod,
            builtin_plan(collective, gpus=gpus, tbs=count),
            size,
            config,
            domains,
            engine=engine,
        )
        .run()
        .completion_ps
        for count, domains in pairs
    ]
    best = min(times)
    assert joint.result.completion_ps == best
    assert (joint.threadblocks, joint.granularity) == pairs[times.index(best)]
    # It can only be as fast as the staged search or faster; every pair was settled.
    assert joint.result.completion_ps <= staged.result.completion_ps
    settled = [*joint.tried, *joint.skipped, *joint.cut, *joint.screened]
    assert len(settled) == len(pairs)


def test_the_joint_search_gives_the_same_answer_in_threads(monkeypatch):
    pod = _short_searches(monkeypatch, 4)
    found = {}
    for threads in (0, 2):
        tbsearch._CACHE.clear()
        found[threads] = best_threadblocks(
            pod, "allgather", 1_000_000, "NAP+NAR", gpus=4, threads=threads, search="joint"
        )
    assert found[2].tried == found[0].tried
    assert found[2].skipped == found[0].skipped
    assert found[2].cut == found[0].cut
    assert found[2].screened == found[0].screened
    assert _model_summary(found[2]) == _model_summary(found[0])


def test_one_granularity_has_one_search():
    # UA uses no domains, and a granularity given leaves nothing to search: joint = staged.
    pod = load_preset("nextgen-4die").fit(2).pod
    for config, granularity in (("UA", None), ("NAP+NAR", 4)):
        tbsearch._CACHE.clear()
        staged = best_threadblocks(pod, "allgather", 100_000, config, granularity, gpus=2)
        joint = best_threadblocks(
            pod, "allgather", 100_000, config, granularity, gpus=2, search="joint"
        )
        assert joint.tried == staged.tried and joint.skipped == staged.skipped


def test_an_unknown_search_is_refused():
    pod = load_preset("nextgen-4die").fit(2).pod
    with pytest.raises(ConfigError, match="unknown search 'exhaustive'"):
        best_threadblocks(pod, "allgather", 100_000, "UA", gpus=2, search="exhaustive")


def test_a_sweep_asked_for_the_joint_search_runs_it():
    # The 2-GPU 1 GB All-to-All under NAP+NAR: the staged search judges each count at the
    # granularity the estimate picks and settles on 256 threadblocks (8 domains); every
    # pair finds 512 threadblocks with 6 domains, a fifth faster (docs/reproduction.md).
    from nunasim.experiments.run_options import RunOptions

    grid = {
        "collective": "alltoall",
        "size": "1GB",
        "gpus": 2,
        "configuration": "NAP+NAR",
        "threadblocks": "auto",
    }
    preset = load_preset("nextgen-4die")
    staged = RunOptions().sweep("staged", grid, preset).iloc[0]
    joint = RunOptions(search="joint").sweep("joint", grid, preset).iloc[0]
    assert (joint["threadblocks"], joint["granularity"]) == (512, 6)
    assert joint["completion_ps"] < 0.85 * staged["completion_ps"]
