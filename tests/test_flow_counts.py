"""The flow engine's line counts, against the packet engine's lowering line for line: every
resource carries exactly the wire lines the packet engine routes over it, the compiled port
hash is the mapping layer's, counting a range by runs of pages gives what resolving each of
its lines gives, and the records stay one per transfer whatever the size."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.collectives.plan import Protocol
from nunasim.engine.flow.demand import _cumulative, flow_demands, wire_extras, wire_tables
from nunasim.engine.flow.engine import _tables
from nunasim.engine.lowering.lower import lower
from nunasim.engine.lowering.resources import resource_numbering
from nunasim.io.presets import load_preset
from nunasim.mapping.accesses import PROTOCOLS, plan_accesses
from nunasim.mapping.address import REGION_SHIFT
from nunasim.mapping.buffer_layout import LAYOUTS, BufferLayout
from nunasim.mapping.line_counts import (
    PageTables,
    PortMap,
    RangeCounts,
    Regions,
    Scratch,
    WireFormat,
    count_range,
)
from nunasim.mapping.port_hash import hashed_ports
from nunasim.mapping.port_runs import HASHES, MAX_SPANS, fold_width, line_port, run_spans
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


def _reference_counts(args):
    """Every line of a range resolved one at a time, as the placement lays it out and the
    mapping layer hashes it: wire lines per port, per (port router, stack) and per stack,
    and data bytes per stack."""
    (chunk, count, proto, offsets, regions, frames, stack, first, ports, mode, line_bytes,
     page_bytes, wire, wire_data, port_pr, nprs, stacks, nports) = args  # fmt: skip
    lines = wire.shape[1]
    k = np.arange(chunk, chunk + count)
    offset = (offsets[k][:, None] + np.arange(lines) * line_bytes).ravel()
    page = offset // page_bytes
    r = regions[page]
    line = frames[page] * (page_bytes // line_bytes) + (offset % page_bytes) // line_bytes
    port = hashed_ports((r << REGION_SHIFT) | line, line, first[r], ports[r], mode)
    weight = np.tile(wire[proto], count)
    data = np.tile(wire_data[proto], count)
    n_port = np.bincount(port, weights=weight, minlength=nports).astype(np.int64)
    n_prs = np.bincount(
        port_pr[port] * stacks + stack[r], weights=weight, minlength=nprs * stacks
    ).astype(np.int64)
    n_stack = np.bincount(stack[r], weights=weight, minlength=stacks).astype(np.int64)
    d_stack = np.bincount(stack[r], weights=data, minlength=stacks).astype(np.int64)
    return n_port, n_prs, n_stack, d_stack


def _fast_counts(args, crossing=True):
    """The same range counted by the flow engine's compiled counting."""
    (chunk, count, proto, offsets, regions, frames, stack, first, ports, mode, line_bytes,
     page_bytes, wire, wire_data, port_pr, nprs, stacks, nports) = args  # fmt: skip
    n_port = np.zeros(nports, dtype=np.int64)
    n_prs = np.zeros(nprs * stacks, dtype=np.int64)
    n_stack = np.zeros(stacks, dtype=np.int64)
    d_stack = np.zeros(stacks, dtype=np.int64)
    count_range(
        0,
        0,
        chunk,
        count,
        proto,
        crossing,
        PageTables(offsets, np.zeros((1, 1), dtype=np.int64), regions, frames, line_bytes,
                   page_bytes),
        Regions(stack, first, ports, np.array([fold_width(int(p)) for p in ports], dtype=np.int64)),
        PortMap.of(mode, port_pr),
        WireFormat(_cumulative(wire), _cumulative(wire_data), *wire_extras(wire)),
        Scratch(np.empty((MAX_SPANS, 3), dtype=np.int64), np.zeros(nports + 1, dtype=np.int64)),
        RangeCounts(n_port, n_prs, n_stack, d_stack),
    )  # fmt: skip
    return n_port, n_prs, n_stack, d_stack


@st.composite
def _ranges(draw):
    """A buffer of random pages (regions of random port spans and stacks; frames in runs
    or scattered up to 2^34), a chunk layout, a protocol, a port hash and a range."""
    line_bytes = draw(st.sampled_from([128, 256, 384]))
    page_bytes = line_bytes * draw(st.sampled_from([1, 2, 3, 4, 16, 32]))
    nports = draw(st.integers(1, 150))
    stacks = draw(st.integers(1, 5))
    nregions = draw(st.integers(1, 5))
    nprs = draw(st.integers(1, min(nports, 6)))
    chunk_bytes = draw(st.integers(1, 40 * page_bytes))
    layout = BufferLayout(chunk_bytes, line_bytes, page_bytes, draw(st.sampled_from(LAYOUTS)))
    chunks = draw(st.integers(1, 6))
    chunk = draw(st.integers(0, chunks - 1))
    count = draw(st.integers(1, chunks - chunk))
    # the arrays from a drawn seed (hypothesis draws long lists slowly)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    first = rng.integers(0, nports, nregions)
    ports = rng.integers(1, nports - first + 1)
    stack = rng.integers(0, stacks, nregions)
    # ports of a port router: spans of consecutive ports, or scattered
    if draw(st.booleans()):
        port_pr = np.arange(nports) * nprs // nports
    else:
        port_pr = rng.integers(0, nprs, nports)
    npages = layout.pages(chunks) + 1  # a line of an unaligned chunk may end one page on
    # frames: runs of consecutive frames in one region (long aligned blocks), or scattered
    if draw(st.booleans()):
        regions = np.full(npages, rng.integers(0, nregions))
        frames = rng.integers(0, 1 << 34) + np.arange(npages)
    else:
        regions = rng.integers(0, nregions, npages)
        frames = rng.integers(0, 1 << 34, npages)
    wire, wire_data = wire_tables(line_bytes, chunk_bytes)
    as_int = [np.asarray(a, dtype=np.int64) for a in (regions, frames, stack, first, ports)]
    return (
        chunk, count, draw(st.integers(0, len(PROTOCOLS) - 1)),
        layout.offsets(np.arange(chunks)), *as_int, draw(st.sampled_from(sorted(HASHES))),
        line_bytes, page_bytes, wire, wire_data, np.asarray(port_pr, dtype=np.int64), nprs,
        stacks, nports,
    )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(args=_ranges())
def test_counting_by_runs_is_counting_every_line(args):
    fast = _fast_counts(args)
    for got, expected in zip(fast, _reference_counts(args), strict=True):
        assert np.array_equal(got, expected)
    # a range that stays on its socket is counted per stack only
    local = _fast_counts(args, crossing=False)
    assert not local[0].any() and not local[1].any()
    assert np.array_equal(local[2], fast[2]) and np.array_equal(local[3], fast[3])


@settings(max_examples=300, deadline=None)
@given(
    region=st.integers(0, 300),
    line=st.integers(0, (1 << 40) - 6000),
    lines=st.integers(1, 5000),
    ports=st.integers(1, 144),
    mode=st.sampled_from(sorted(HASHES)),
)
def test_the_spans_of_a_run_of_lines_are_its_lines_ports(region, line, lines, ports, mode):
    address = (region << REGION_SHIFT) | line
    spans = np.empty((MAX_SPANS, 3), dtype=np.int64)
    n = run_spans(address, line, lines, ports, fold_width(ports), HASHES[mode], spans)
    got = np.zeros(ports, dtype=np.int64)
    for start, length, times in spans[:n]:
        assert 1 <= length <= ports and times >= 1
        got[(start + np.arange(length)) % ports] += times
    offsets = line + np.arange(lines)
    each = hashed_ports(
        (region << REGION_SHIFT) | offsets, offsets, np.zeros(lines, dtype=np.int64),
        np.full(lines, ports), mode,
    )  # fmt: skip
    assert np.array_equal(got, np.bincount(each, minlength=ports))


def test_simple_lines_carry_one_wire_line_and_ll_two():
    # 1100 B on 256 B lines: five data lines; in LL nine wire lines of 128 data bytes,
    # two on each data line but the last, which holds one
    wire, _ = wire_tables(256, 1100)
    base, start, line, extra = wire_extras(wire)
    simple, ll = PROTOCOLS.index(Protocol.SIMPLE), PROTOCOLS.index(Protocol.LL)
    assert base[simple] == 1 and start[simple] == start[simple + 1]
    assert base[ll] == 2
    assert line[start[ll] : start[ll + 1]].tolist() == [4]
    assert extra[start[ll] : start[ll + 1]].tolist() == [-1]
    assert np.array_equal(base[:, None] + _extras_table(wire.shape, start, line, extra), wire)


def _extras_table(shape, start, line, extra):
    table = np.zeros(shape, dtype=np.int64)
    for q in range(shape[0]):
        table[q, line[start[q] : start[q + 1]]] = extra[start[q] : start[q + 1]]
    return table
