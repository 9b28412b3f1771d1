"""The threadblock search skips a candidate only when its lower bound shows it cannot win,
so its answer is the exhaustive search's."""

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
