"""Route entries: 32-bit, every one written when routes are built, refused beyond range."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.kernel.kinds import EGRESS
from nunasim.engine.kernel.rows import ROUTE_DTYPE, ROUTE_MAX
from nunasim.engine.lowering.lower import lower
from nunasim.engine.packet.engine import route_rows
from nunasim.io.presets import load_preset
from nunasim.policies.place import place


@settings(max_examples=10, deadline=None)
@given(
    name=st.sampled_from(["allgather:direct", "allreduce:direct", "alltoall:direct"]),
    gpus=st.sampled_from([2, 3, 4]),
    size=st.integers(1, 200_000),
    config=st.sampled_from(["UA", "NAP+NAR"]),
)
def test_every_route_entry_is_written(name: str, gpus: int, size: int, config: str) -> None:
    # The table is allocated uninitialised: an entry the compiled pass skipped would hold
    # whatever the memory held. The plane's latency follows every egress port and nothing
    # else, and every entry names a resource of the pod.
    plan = builtin_plan(f"{name}:gpus={gpus}:tbs={gpus - 1}")
    pod = load_preset("nextgen-4die").fit(gpus).pod
    lowered = lower(pod, plan, place(plan, size, pod, config))
    assert lowered.route_table.dtype == ROUTE_DTYPE
    egress = lowered.resources.kind[lowered.route] == EGRESS
    assert egress.any()
    np.testing.assert_array_equal(lowered.route_post_ps, np.where(egress, pod.plane_latency_ps, 0))
    assert lowered.route.min() >= 0
    assert lowered.route.max() < len(lowered.resources.kind)
    assert lowered.route_start[-1] == len(lowered.route)


def test_route_values_beyond_an_entry_are_refused() -> None:
    small = np.zeros(3, dtype=np.int64)
    assert route_rows(small + ROUTE_MAX, small).dtype == ROUTE_DTYPE
    with pytest.raises(ValueError, match="route entries hold"):
        route_rows(small + ROUTE_MAX + 1, small)
    with pytest.raises(ValueError, match="route entries hold"):
        route_rows(small, small + ROUTE_MAX + 1)
