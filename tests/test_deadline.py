"""A run given a deadline stops once its clock passes it unfinished, and only then: it
returns nothing exactly when its completion is later, and otherwise the same result as a
run without one (the threadblock search's cut-off relies on both)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import CASES, Case
from nunasim.engine.flow.engine import FlowRun
from nunasim.engine.packet.engine import simulate

# Cases of every collective and protocol, both data-polled (LL, packets) and fenced.
DEADLINE_CASES = CASES


def packet_completion(case: Case, deadline_ps: int | None) -> tuple[int, tuple] | None:
    lowered = case.build().lowered
    trace = simulate(lowered, deadline_ps)
    if trace is None:
        return None
    digest = (trace.events, trace.step_end.tobytes(), trace.msg_done.tobytes())
    return int(trace.step_end.max()), (*digest, trace.res_flits.tobytes())


def flow_completion(case: Case, deadline_ps: int | None) -> tuple[int, tuple] | None:
    built = case.build()
    result = FlowRun(built.pod, built.plan, built.placement).run(deadline_ps)
    if result is None:
        return None
    summary = {k: v for k, v in result.summary().items() if k != "wall_s"}
    return result.completion_ps, (json.dumps(summary, sort_keys=True, default=str),)


ENGINES = {"packet": packet_completion, "flow": flow_completion}


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("case", DEADLINE_CASES, ids=str)
def test_a_deadline_cuts_exactly_the_later_runs(engine, case):
    run = ENGINES[engine]
    full = run(case, None)
    assert full is not None
    completion = full[0]
    # At its completion it is not cut, and nothing it reports changes.
    assert run(case, completion) == full
    assert run(case, 10 * completion) == full
    # A picosecond sooner, or anywhere before, it is.
    assert run(case, completion - 1) is None
    assert run(case, 0) is None
    assert run(case, completion // 2) is None


@settings(max_examples=12, deadline=None)
@given(
    case=st.sampled_from(DEADLINE_CASES),
    engine=st.sampled_from(sorted(ENGINES)),
    fraction=st.floats(0.0, 2.0),
)
def test_cut_if_and_only_if_later(case, engine, fraction):
    run = ENGINES[engine]
    full = run(case, None)
    assert full is not None
    deadline = int(full[0] * fraction)
    outcome = run(case, deadline)
    if full[0] > deadline:
        assert outcome is None
    else:
        assert outcome == full
