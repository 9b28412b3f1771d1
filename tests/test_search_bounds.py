"""The bounds that make a threadblock search's losers cheap without changing its answer:
the packet core's window bound, by which a search skips a candidate, is never after the
run's completion, and the core's progress bound stops a run with a deadline it cannot
meet as soon as its resources' remaining work shows it, never one that would meet it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import CASES, Case
from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.analytic.bound import bounds_ps, collective_messages, route_sums
from nunasim.engine.kernel.rows import LAT, OCC
from nunasim.engine.packet.engine import core_inputs, run_core, simulate
from nunasim.engine.packet.progress_bound import OWED, OWED_DATA, TAIL, TAIL_DATA, route_loads
from nunasim.experiments.tbsearch import best_threadblocks, candidate_counts
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario

# Few threadblocks, each with many lines: their CUs' windows bound the run.
WINDOW_BOUND = [
    Case("allgather:direct:gpus=2:tbs=1", 2_000_000, "UA"),
    Case("alltoall:direct:gpus=4:tbs=3", 4_000_000, "NAP+NAR"),
]


@pytest.mark.parametrize("case", CASES + WINDOW_BOUND, ids=str)
def test_the_window_bound_is_never_after_the_completion(case):
    lowered = case.build().lowered
    completion = int(simulate(lowered).step_end.max())
    lower, window = bounds_ps(lowered)
    assert lower <= completion and window <= completion


def test_the_window_bound_is_the_binding_one_where_windows_bound_the_run():
    for case in WINDOW_BOUND:
        lowered = case.build().lowered
        lower, window = bounds_ps(lowered)
        completion = int(simulate(lowered).step_end.max())
        assert lower < window <= completion, case
        assert window > 0.8 * completion, case  # nearly the run: few lines wait on links


def _resource_term(lowered) -> int:
    """Where the resources' work alone ends at zero load: what the core's check sees at 0."""
    _, flits = route_sums(lowered, collective_messages(lowered))
    used = flits > 0
    res = lowered.resources
    return int(((flits[used] - 1) * res.occ[used] + res.lat[used]).max())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_run_that_cannot_meet_its_deadline_stops_at_once(case):
    lowered = case.build().lowered
    hopeless = _resource_term(lowered) - 1
    done = run_core(core_inputs(lowered, hopeless))
    assert done.cut and done.events == 0
    assert simulate(lowered, hopeless) is None


def _tail_term(lowered, owed_column: int = OWED, tail_column: int = TAIL) -> int:
    """The same with each resource's least tail after it: what the core's check sees at 0
    (over every message, or with ``OWED_DATA`` and ``TAIL_DATA`` over data messages)."""
    inputs = core_inputs(lowered, 0)
    starts = inputs.route_start[inputs.msg_route]
    ends = inputs.route_start[inputs.msg_route + 1]
    owed = route_loads(inputs, starts, ends)
    res, used = inputs.res, owed[:, owed_column] > 0
    owes, tail = owed[used, owed_column], owed[used, tail_column]
    return int(((owes - 1) * res[used, OCC] + res[used, LAT] + tail).max())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_tails_tighten_the_bound_and_it_is_never_after_the_completion(case):
    lowered = case.build().lowered
    completion = int(simulate(lowered).step_end.max())
    with_tails = max(_tail_term(lowered), _tail_term(lowered, OWED_DATA, TAIL_DATA))
    assert _resource_term(lowered) < with_tails <= completion
    done = run_core(core_inputs(lowered, with_tails - 1))
    assert done.cut and done.events == 0


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_run_that_meets_its_deadline_exactly_is_never_cut(case):
    """The bound follows each message's chain (acknowledgement, flags, their receivers):
    a run whose completion is its deadline runs to the end, and ends the same."""
    lowered = case.build().lowered
    completion = int(simulate(lowered).step_end.max())
    met = run_core(core_inputs(lowered, completion))
    assert not met.cut and int(met.outputs.step_end.max()) == completion


def test_the_chains_after_the_data_tighten_the_bound_where_flags_follow_stores():
    """A direct All-Gather's stores are followed by their acknowledgement and a flag: over
    the data messages alone, the chain puts the bound later than over every message, whose
    least tail is a flag's, and no later than the run."""
    lowered = Case("allgather:direct:gpus=4:tbs=3", 4_000_000, "UA").build().lowered
    completion = int(simulate(lowered).step_end.max())
    every = _tail_term(lowered)
    data = _tail_term(lowered, OWED_DATA, TAIL_DATA)
    assert every < data <= completion


@settings(max_examples=10, deadline=None)
@given(case=st.sampled_from(CASES), fraction=st.floats(0.5, 1.0))
def test_a_cut_run_stops_no_later_than_its_clock_would(case, fraction):
    lowered = case.build().lowered
    full = run_core(core_inputs(lowered))
    completion = int(full.outputs.step_end.max())
    deadline = int(completion * fraction) - 1
    cut = run_core(core_inputs(lowered, deadline))
    assert cut.cut and cut.events <= full.events
    # Its clock never went past the deadline: nothing it started began after it.
    issued = cut.outputs.msg_issue
    assert (issued[issued >= 0] <= deadline).all()


def test_a_search_skips_by_the_window_bound_and_answers_the_same():
    """The 2-GPU 2 MB All-Gather under UA: one and two threadblocks cannot win by their
    windows alone, though their lower bounds say they might; the answer is the one every
    candidate run to the end gives."""
    pod = load_preset("nextgen-4die").fit(2).pod
    found = best_threadblocks(pod, "allgather", 2_000_000, "UA", gpus=2)
    exhaustive, lower = {}, {}
    for count in candidate_counts(2):
        scenario = Scenario(pod, builtin_plan("allgather", gpus=2, tbs=count), 2_000_000, "UA")
        result = scenario.run()
        exhaustive[count], lower[count] = result.completion_ps, result.lower_bound_ps
    best = min(exhaustive.values())
    first = min(c for c, t in exhaustive.items() if t == best)
    assert (found.threadblocks, found.result.completion_ps) == (first, best)
    by_window = {c for c, _, bound in found.skipped if lower[c] < best <= bound}
    assert by_window == {1, 2}
    assert all(bound <= exhaustive[c] for c, _, bound in found.skipped)
