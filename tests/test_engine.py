"""The packet engine's own checks: per-message zero-load latencies, bytes at their exact
addresses, flags after their data, random floorplans. What every engine must do (bounds,
determinism, conservation per stack, monotonicity) is in the conformance suite."""

import os
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conservation import assert_conserved
from engine_modes import outputs_compiled_and_not
from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.analytic.bound import critical_path_ps, lower_bound_ps, store_latency_ps
from nunasim.engine.kernel.kinds import INJECT, LINK
from nunasim.engine.lowering.lower import lower
from nunasim.engine.lowering.messages import FLAG, READ, STORE
from nunasim.engine.packet.engine import simulate
from nunasim.hardware import Pod
from nunasim.io.msccl import load_msccl_xml
from nunasim.io.presets import load_preset
from nunasim.policies.place import place
from nunasim.scenario import Scenario
from small_plans import one_store_plan
from strategies import BUILTIN_ALGORITHMS, sockets

POD = load_preset("nextgen-4die").pod
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "plans")


@settings(max_examples=40, deadline=None)
@given(
    sockets(max_width=10, max_height=6),
    st.integers(0, 10**6),
    st.floats(1e9, 2e11),
    st.integers(0, 1000),
    st.sampled_from(["UA", "UA+NAR", "NAP+NAR"]),
)
def test_single_store_equals_the_oracle_to_the_picosecond(socket, plane_ps, port_bw, seed, config):
    pod = Pod(socket, 2, plane_ps, port_bw)
    plan = one_store_plan()
    granularity = max(socket.valid_granularities)
    placement = place(plan, socket.line_bytes, pod, config, granularity, seed)
    lowered = lower(pod, plan, placement)
    trace = simulate(lowered)
    stores = np.nonzero(lowered.msg_kind == STORE)[0]
    assert len(stores) == 1
    m = stores[0]
    address = int(lowered.msg_address[m])
    amap = placement.address_map
    cu_router = socket.cu_router(int(placement.gpus[0].tb_cu[0]))
    expected = store_latency_ps(pod, cu_router, amap.port_of(address), amap.stack_of(address))
    assert trace.msg_done[m] - trace.msg_issue[m] - socket.l1_latency_ps == expected
    # The read before it: L1, request, the stack, the response.
    read = np.nonzero(lowered.msg_kind == READ)[0][0]
    stack = socket.stacks[amap.stack_of(int(lowered.msg_address[read]))]
    assert trace.msg_done[read] - trace.msg_issue[read] == (
        socket.l1_latency_ps
        + socket.path_latency_ps(cu_router, stack.router)  # the request
        + stack.latency_ps
        + socket.path_latency_ps(stack.router, cu_router)  # the data coming back
    )
    # When no flit ever waited (a flag can catch up with its own store on a link whose
    # serialisation is far longer than its hop latency), the run takes exactly its
    # zero-load critical path; never less.
    if not trace.res_wait_max.any():
        assert int(trace.step_end.max()) == critical_path_ps(lowered)
    assert int(trace.step_end.max()) >= critical_path_ps(lowered)


def _run(plan, size, config, pod=POD, granularity="auto"):
    placement = place(plan, size, pod, config, granularity)
    lowered = lower(pod, plan, placement)
    return placement, lowered, simulate(lowered)


CONSERVATION = [
    ("allgather:direct:gpus=4:tbs=6", 100_000),
    ("reducescatter:direct:gpus=4", 100_000),
    ("allreduce:direct:gpus=3", 30_000),
    ("allreduce:onepass:gpus=4:chunks=4", 40_000),
    ("alltoall:direct:gpus=8", 100_000),
    ("allreduce:ring:gpus=4:tbs=2:chunks=2", 64_000),
    ("allgather:ring:gpus=3", 30_000),
]


@pytest.mark.parametrize(("name", "size"), CONSERVATION)
@pytest.mark.parametrize("config", ["UA", "NAP+NAR"])
def test_every_byte_arrives_once_at_the_right_place(name, size, config):
    plan = builtin_plan(name)
    _assert_conserved(plan, size, config)


@pytest.mark.parametrize(
    "fixture",
    [
        "custom_allreduce.xml",
        "a2a2ll.xml",
        "ag-1k-512k.xml",
        "allreduce.json",
        "allreduce_packet.json",
    ],
)
def test_fixture_plans_conserve_bytes(fixture):
    path = os.path.join(FIXTURES, fixture)
    if fixture.endswith(".json"):
        from nunasim.io.mscclpp import load_mscclpp

        plan = load_mscclpp(path)
    else:
        plan = load_msccl_xml(path)
    _assert_conserved(plan, 64 * 1024, "NAP+NAR")


def _assert_conserved(plan, size, config):
    assert_conserved(plan, *_run(plan, size, config))


def test_uncompiled_engine_gives_the_same_answer():
    code = (
        "from nunasim.io.presets import load_preset;"
        "from nunasim.collectives.builtins import builtin_plan;"
        "from nunasim.scenario import Scenario;"
        "r = Scenario(load_preset('nextgen-4die').pod, builtin_plan('allgather:direct:gpus=4'),"
        " 20000, 'NAP+NAR').run();"
        "print(r.completion_ps, r.events, int(r.stores['latency_ps'].sum()))"
    )
    compiled, uncompiled = outputs_compiled_and_not(code)
    assert compiled == uncompiled


def test_more_port_bandwidth_never_slows_an_uncontended_store():
    plan = one_store_plan()
    times = []
    for gbps in (10, 25, 50, 100, 400):
        pod = replace(POD, port_bandwidth=gbps * 1e9, sockets=2)
        times.append(Scenario(pod, plan, 256, "UA").run().completion_ps)
    assert times == sorted(times, reverse=True)


def test_flags_follow_the_data_they_announce():
    plan = builtin_plan("allgather:direct:gpus=4")
    _, lowered, trace = _run(plan, 100_000, "UA")
    flags = np.nonzero(lowered.msg_kind == FLAG)[0]
    for f in flags:
        step = lowered.msg_target[f]
        assert trace.step_begin[step] >= trace.msg_done[f]


def test_oversized_runs_are_refused_before_lowering():
    from nunasim.engine.lowering.lower import count_messages
    from nunasim.errors import ConfigError

    plan = builtin_plan("allgather:direct:gpus=4")
    placement = place(plan, 1_000_000, POD, "UA")
    expected = count_messages(plan, placement.chunk_bytes, placement.line_bytes)
    assert expected == lower(POD, plan, placement).messages
    with pytest.raises(ConfigError, match="more than the packet engine's limit"):
        lower(POD, plan, placement, max_messages=expected - 1)


@settings(max_examples=60, deadline=None)
@given(
    sockets(max_width=8, max_height=4),
    st.sampled_from(BUILTIN_ALGORITHMS),
    st.integers(2, 4),
    st.integers(1, 6),
    st.sampled_from(["UA", "UA+NAR", "NUMA", "NAP", "NAP+NAR", "NAP*"]),
    st.integers(0, 600_000),
    st.integers(0, 3),
)
def test_random_scenarios_finish_and_respect_the_bound(
    socket, algorithm, gpus, lines, config, plane_ps, seed
):
    """On random floorplans, plans, sizes and configurations: every step and message
    finishes, nothing beats the analytic lower bound, and every store is delivered."""
    pod = Pod(socket, gpus, plane_ps, 50e9)
    plan = builtin_plan(f"{algorithm}:gpus={gpus}")
    size = plan.chunks_per_size * lines * socket.line_bytes
    placement = place(plan, size, pod, config, max(socket.valid_granularities), seed)
    lowered = lower(pod, plan, placement)
    trace = simulate(lowered)
    assert (trace.step_end >= 0).all() and (trace.msg_done >= 0).all()
    assert int(trace.step_end.max()) >= lower_bound_ps(lowered)
    stores = lowered.msg_kind == STORE
    assert (trace.msg_done[stores] - trace.msg_issue[stores] > 0).all()


@pytest.mark.parametrize("config", ["UA", "NAP+NAR"])
def test_credit_flow_control_in_a_collective(config):
    """On the reference router the links and injection channels feed credit-controlled
    buffers; a collective still finishes (no deadlock) and moves every byte once."""
    pod = replace(load_preset("mesh8x8-vc").pod, sockets=4)
    plan = builtin_plan("allgather:direct:gpus=4")
    placement, lowered, trace = _run(plan, 64_000, config, pod)
    kinds = lowered.resources.kind[lowered.resources.vcs > 0]
    assert set(kinds.tolist()) == {LINK, INJECT}
    assert_conserved(plan, placement, lowered, trace)


def test_uncompiled_engine_gives_the_same_answer_under_credits():
    code = (
        "from dataclasses import replace;"
        "from nunasim.io.presets import load_preset;"
        "from nunasim.collectives.builtins import builtin_plan;"
        "from nunasim.scenario import Scenario;"
        "pod = replace(load_preset('mesh8x8-vc').pod, sockets=4);"
        "r = Scenario(pod, builtin_plan('allgather:direct:gpus=4'), 20000, 'NAP+NAR').run();"
        "print(r.completion_ps, r.events, int(r.stores['latency_ps'].sum()))"
    )
    compiled, uncompiled = outputs_compiled_and_not(code)
    assert compiled == uncompiled


def test_the_step_graph_kept_per_plan_serves_every_placement_as_a_fresh_build():
    # The plan-only part of the step graph is kept per plan object; each placement adds
    # its own CUs and flag addresses, exactly as a graph built from scratch.
    from nunasim.engine.lowering.steps import step_graph

    pod = load_preset("nextgen-4die").pod.fit(4)
    plan = builtin_plan("allreduce", gpus=4, tbs=6)
    for config in ("UA", "NAP+NAR", "UA"):
        placement = place(plan, 64_000, pod, config, "auto")
        counters = np.zeros(0, dtype=np.int64)
        kept = step_graph(plan, placement, counters, counters)
        fresh = step_graph(replace(plan), placement, counters, counters)
        assert kept.tb_cu == fresh.tb_cu and kept.wait == fresh.wait
        assert kept.succ == fresh.succ and kept.releases == fresh.releases
        np.testing.assert_array_equal(kept.flag_step, fresh.flag_step)
        for a, b in zip(kept.flags, fresh.flags, strict=True):
            np.testing.assert_array_equal(a, b)
