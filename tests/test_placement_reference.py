"""The compiled placement equals the reference placement (the per-threadblock Python loop
it replaced, ``reference_placement.py``) decision for decision: the same CU for every
threadblock, the same region and frame for every page and flag page, the same budgets
charged and the same fallbacks counted."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.mapping.placement import BUFFERS
from nunasim.policies.configurations import CONFIGURATIONS
from nunasim.policies.dispatch import ua_cus
from nunasim.policies.place import place
from reference_placement import _ua_cus, reference_place


def _same(actual, expected) -> None:
    assert actual.granularity == expected.granularity
    assert actual.fallback_tbs == expected.fallback_tbs
    assert actual.fallback_chunks == expected.fallback_chunks
    assert actual.padding_bytes == expected.padding_bytes
    for a, e in zip(actual.cu_used, expected.cu_used, strict=True):
        np.testing.assert_array_equal(a, e)
    for a, e in zip(actual.stack_used, expected.stack_used, strict=True):
        np.testing.assert_array_equal(a, e)
    for a, e in zip(actual.gpus, expected.gpus, strict=True):
        np.testing.assert_array_equal(a.tb_cu, e.tb_cu)
        np.testing.assert_array_equal(a.tb_domain, e.tb_domain)
        for pages, reference in [(a.flags, e.flags)] + [
            (a.buffers[b], e.buffers[b]) for b in BUFFERS
        ]:
            np.testing.assert_array_equal(pages.region, reference.region)
            np.testing.assert_array_equal(pages.frame, reference.frame)


@settings(max_examples=25, deadline=None)
@given(
    plan=st.sampled_from(
        [
            "allgather:direct",
            "allreduce:direct",
            "alltoall:direct",
            "allgather:ring",
            "reducescatter:direct",
            "allreduce:ring",
        ]
    ),
    gpus=st.integers(2, 6),
    per_peer=st.sampled_from([1, 2, 3, 8]),
    size=st.sampled_from([4096, 12_345, 100_000, 1_000_000]),
    config=st.sampled_from(sorted(CONFIGURATIONS)),
    granularity=st.sampled_from([1, 2, 3, 4, 6, 12]),
    seed=st.integers(0, 2**16),
    grouping=st.sampled_from(["all", "communication"]),
    layout=st.sampled_from(["aligned", "packed"]),
)
def test_compiled_placement_equals_the_reference(
    plan, gpus, per_peer, size, config, granularity, seed, grouping, layout
):
    tbs = per_peer * (gpus - 1) if ":direct" in plan else per_peer
    built = builtin_plan(f"{plan}:gpus={gpus}:tbs={tbs}")
    pod = load_preset("nextgen-4die").fit(gpus).pod
    if granularity not in pod.socket.valid_granularities:
        granularity = 2
    actual = place(built, size, pod, config, granularity, seed, grouping, layout)
    _same(actual, reference_place(built, size, pod, config, granularity, seed, grouping, layout))


@settings(max_examples=20, deadline=None)
@given(count=st.integers(0, 2000), seed=st.integers(0, 2**32 - 1))
def test_ua_dispatch_equals_the_loop(count, seed):
    socket = load_preset("nextgen-4die").socket
    np.testing.assert_array_equal(
        ua_cus(socket, count, np.random.default_rng(seed)),
        _ua_cus(socket, count, np.random.default_rng(seed)),
    )
