"""The flow engine's line counts, against the packet engine's lowering line for line: every
resource carries exactly the wire lines the packet engine routes over it, the compiled port
hash is the mapping layer's, and the records stay one per transfer whatever the size."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.flow.demand import flow_demands
from nunasim.engine.flow.engine import _tables
from nunasim.engine.flow.port_hash import HASHES, fold_width, line_port
from nunasim.engine.lower import lower
from nunasim.engine.resources import resource_numbering
from nunasim.io.presets import load_preset
from nunasim.mapping.accesses import plan_accesses
from nunasim.mapping.port_hash import hashed_ports
from nunasim.policies.place import place

CASES = [
    ("allgather:direct:gpus=4:tbs=6", 100_000, "UA"),
    ("allgather:direct:gpus=4:tbs=3:proto=LL", 64_000, "UA+NAR"),
    ("allgather:direct:gpus=4:tbs=3:proto=LL128", 50_000, "NAP+NAR"),
    ("allreduce:ring:gpus=4:tbs=2:chunks=2", 64_000, "NAP+NAR"),
    ("alltoall:direct:gpus=4", 100_000, "NUMA+NAR"),
]


def _demands(name, size, config):
    plan = builtin_plan(name)
    pod = load_preset("nextgen-4die").pod.with_sockets(plan.ngpus)
    placement = place(plan, size, pod, config)
    numbering = resource_numbering(pod, plan.ngpus)
    demands = flow_demands(
        pod, plan, placement, plan_accesses(plan), numbering, _tables(pod), "bf16"
    )
    return pod, plan, placement, demands


@pytest.mark.parametrize(("name", "size", "config"), CASES)
def test_every_resource_carries_the_lines_the_packet_engine_routes_over_it(name, size, config):
    pod, plan, placement, demands = _demands(name, size, config)
    lowered = lower(pod, plan, placement)
    data = lowered.msg_lineop >= 0  # flags are latency only in the flow engine
    per_message = np.diff(lowered.route_start)
    entries = lowered.route[np.repeat(data, per_message)]
    expected = np.bincount(entries, minlength=len(lowered.resources.occ))
    assert np.array_equal(demands.res_flits, expected)
    assert demands.access_lines.sum() == data.sum()
    assert demands.access_data.sum() == lowered.msg_bytes[data].sum()


@settings(max_examples=200, deadline=None)
@given(
    region=st.integers(0, 300),
    line=st.integers(0, (1 << 40) - 1),
    first=st.integers(0, 100),
    ports=st.integers(1, 144),
    mode=st.sampled_from(sorted(HASHES)),
)
def test_the_compiled_port_hash_is_the_mapping_layers(region, line, first, ports, mode):
    address = (region << 40) | line
    expected = hashed_ports(
        np.array([address]), np.array([line]), np.array([first]), np.array([ports]), mode
    )[0]
    got = line_port(address, line, first, ports, fold_width(ports), HASHES[mode])
    assert got == expected


def test_records_are_per_transfer_not_per_line():
    small = _demands("allgather:direct:gpus=4:tbs=6", 1 << 20, "UA")[3]
    large = _demands("allgather:direct:gpus=4:tbs=6", 1 << 26, "UA")[3]
    assert len(large.flow_ops) == len(small.flow_ops)
    assert large.access_lines.sum() == 64 * small.access_lines.sum()
    # a flow touches only resources of its two GPUs, its CU's window and compute unit
    per_gpu = len(small.res_flits) // 4
    assert len(large.entry_res) <= len(large.flow_ops) * (2 * per_gpu + 2)
