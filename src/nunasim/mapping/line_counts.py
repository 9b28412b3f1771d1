"""A range of chunks' lines counted a run of pages at a time, nothing stored: per port, per
(port router, stack) and per stack, with the data bytes per stack.

A stack is a property of a page, and pages of one region with consecutive frames make one
run of consecutive line addresses, whose ports (a hash of the line address) come as a few
spans of consecutive ports (``port_runs.run_spans``) added a span at a time
(``port_tally``). A wire format whose lines do not all carry the same number of wire lines
(LL's last line, one LL128 line in fifteen) counts the usual number per line that way and
the difference line by line. The flow engine counts every range of a run this way, the
granularity estimate the first lines of every remote chunk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from nunasim.jit import jit
from nunasim.mapping.address import REGION_SHIFT, AddressMap
from nunasim.mapping.port_runs import HASHES, MAX_SPANS, fold_width, line_port, run_spans
from nunasim.mapping.port_tally import flush, router_runs, tally_cyclic

if TYPE_CHECKING:
    from nunasim.mapping.placement import Placement

# What ``count_range`` reads and writes, bundled by meaning and built once in Python (a
# compiled kernel takes a dozen arguments at most; numba types a bundle on each call from
# Python, a few microseconds: benchmarks/mapping_kernel_calls.py).


class PageTables(NamedTuple):
    """Where a placement puts the lines of its buffers' chunks."""

    offsets: np.ndarray  # per chunk of a buffer: its byte offset (``BufferLayout.offsets``)
    first: np.ndarray  # [GPU, buffer]: the row of its first page in ``region`` and ``frame``
    region: np.ndarray  # per page: its region of the address map
    frame: np.ndarray  # per page: its frame in that region
    line_bytes: int
    page_bytes: int

    @classmethod
    def of(cls, placement: Placement, chunks: int) -> PageTables:
        """``placement``'s tables, with the offsets of a buffer's first ``chunks`` chunks."""
        table, socket = placement.page_table, placement.socket
        return cls(
            placement.layout.offsets(np.arange(chunks)),
            table.first,
            table.region,
            table.frame,
            socket.line_bytes,
            socket.page_bytes,
        )


class Regions(NamedTuple):
    """Per region of an address map: its stack, first port, port count and the XOR fold's
    width over that count (``region_columns``)."""

    stack: np.ndarray
    first_port: np.ndarray
    ports: np.ndarray
    width: np.ndarray


class PortMap(NamedTuple):
    """How lines reach ports: the socket's port hash, and each port's port router with the
    spans of consecutive ports that share one (``port_tally.router_runs``)."""

    mode: int  # the port hash (``port_runs.HASHES``)
    router: np.ndarray  # per port: its port router, as a row of the per-router tables
    run_start: np.ndarray
    run_router: np.ndarray
    run_of_port: np.ndarray

    @classmethod
    def of(cls, port_hash: str, router: np.ndarray) -> PortMap:
        """The map of the port hash named ``port_hash`` (``Socket.port_hash``), each port
        ``p`` on port router ``router[p]``."""
        router = np.asarray(router, dtype=np.int64)
        return cls(HASHES[port_hash], router, *router_runs(router))


class WireFormat(NamedTuple):
    """Per protocol (a row) and prefix of a chunk's lines: the wire lines and data bytes
    that land on those lines, summed; and the wire lines most lines carry, with the lines
    that carry another number (CSR over protocols: the line and its difference)."""

    wire_cum: np.ndarray  # [protocol, lines + 1]
    data_cum: np.ndarray  # [protocol, lines + 1]
    base: np.ndarray  # per protocol
    extra_start: np.ndarray  # per protocol, and one more
    extra_line: np.ndarray
    extra_wire: np.ndarray


class Scratch(NamedTuple):
    """Working space of a count, reused range after range (``scratch``)."""

    spans: np.ndarray  # [MAX_SPANS, 3]: a run's spans of ports
    diff: np.ndarray  # per port, and one more: the difference array of ``port_tally``


class RangeCounts(NamedTuple):
    """Where ``count_range`` adds a range's counts."""

    port: np.ndarray  # per port: wire lines
    router_stack: np.ndarray  # per (port router, stack), flat: wire lines
    stack: np.ndarray  # per stack: wire lines
    data: np.ndarray  # per stack: data bytes


def region_columns(amap: AddressMap) -> Regions:
    """Per region of ``amap``, what ``count_range`` reads of it."""
    regions = amap.regions
    ports = np.array([r.ports for r in regions], dtype=np.int64)
    return Regions(
        np.array([r.stack for r in regions], dtype=np.int64),
        np.array([r.first_port for r in regions], dtype=np.int64),
        ports,
        np.array([fold_width(int(p)) for p in ports], dtype=np.int64),
    )


@jit(inline=True)
def plain_wire(lines):
    """The plain format's ``WireFormat`` over a chunk's first ``lines`` lines: one wire
    line per line, nothing out of the usual (the data sums are the wire lines' too)."""
    cumulative = np.arange(lines + 1).reshape(1, lines + 1)
    none = np.zeros(0, dtype=np.int64)
    return WireFormat(
        cumulative, cumulative, np.ones(1, np.int64), np.zeros(2, np.int64), none, none
    )


@jit(inline=True)
def scratch(ports):
    """A ``Scratch`` for counts over ``ports`` ports."""
    return Scratch(np.empty((MAX_SPANS, 3), dtype=np.int64), np.zeros(ports + 1, dtype=np.int64))


@jit
def count_range(gpu, buffer, chunk, count, proto, crossing, pages, regions, ports, wire, work, out):
    """Add the wire lines of chunks ``chunk .. chunk + count - 1`` of ``buffer`` on ``gpu``
    in protocol ``proto`` to ``out`` (a ``RangeCounts``): per stack (with their data
    bytes), and when the range ``crossing`` leaves its socket per port and per (port
    router, stack) too. ``pages``, ``regions``, ``ports``, ``wire``: a ``PageTables``,
    ``Regions``, ``PortMap`` and ``WireFormat``; ``work``: a ``Scratch``."""
    line_bytes = pages.line_bytes
    per_page = pages.page_bytes // line_bytes
    lines = wire.wire_cum.shape[1] - 1
    stacks = out.stack.shape[0]
    first_page = pages.first[gpu, buffer]
    weight = wire.base[proto]
    for k in range(chunk, chunk + count):
        # line i of the chunk is line first + i of the buffer, whatever its byte offset
        first = pages.offsets[k] // line_bytes
        page = first_page + first // per_page
        within = first % per_page
        run_region = -1
        run_line = 0
        run_lines = 0
        i = 0
        # one pass more than there are pages, to count the last run
        while i < lines or run_lines:
            r, line, take = -1, 0, 0
            if i < lines:
                take = min(per_page - within, lines - i)
                r = pages.region[page]
                line = pages.frame[page] * per_page + within
                s = regions.stack[r]
                out.stack[s] += wire.wire_cum[proto, i + take] - wire.wire_cum[proto, i]
                out.data[s] += wire.data_cum[proto, i + take] - wire.data_cum[proto, i]
                i += take
                page += 1
                within = 0
                if not crossing or weight == 0:
                    continue
                if r == run_region and line == run_line + run_lines:
                    run_lines += take  # the next frame of the same region: one run of lines
                    continue
            if run_lines:
                # spelled out here, not in a helper: a call with this many arrays costs
                # more than the counting it does
                q = run_region
                n_ports = regions.ports[q]
                address = (q << REGION_SHIFT) | run_line
                spans = work.spans
                n = run_spans(address, run_line, run_lines, n_ports, regions.width[q],
                              ports.mode, spans)  # fmt: skip
                for j in range(n):
                    tally_cyclic(regions.first_port[q], n_ports, spans[j, 0], spans[j, 1],
                                 weight * spans[j, 2], regions.stack[q], stacks, work.diff,
                                 out.router_stack, ports.run_start, ports.run_router,
                                 ports.run_of_port)  # fmt: skip
            run_region, run_line, run_lines = r, line, take
        if not crossing:
            continue
        # the lines that carry other than ``weight`` wire lines, one at a time
        for j in range(wire.extra_start[proto], wire.extra_start[proto + 1]):
            b = first + wire.extra_line[j]
            page = first_page + b // per_page
            r = pages.region[page]
            line = pages.frame[page] * per_page + b % per_page
            p = line_port(
                (r << REGION_SHIFT) | line,
                line,
                regions.first_port[r],
                regions.ports[r],
                regions.width[r],
                ports.mode,
            )
            out.port[p] += wire.extra_wire[j]
            out.router_stack[ports.router[p] * stacks + regions.stack[r]] += wire.extra_wire[j]
    if crossing:
        flush(work.diff, out.port)


@jit
def count_stack_lines(row, gpu, buffer, chunk, lines, pages, region_stack, out):
    """Add the first ``lines`` lines of each chunk (``gpu``, ``buffer``, ``chunk``) to
    ``out[row, stack]`` of the stack that holds them (a local count: no ports). ``pages``:
    a ``PageTables``; ``region_stack``: each region's stack."""
    stacks = out.shape[1]
    none = np.zeros(0, dtype=np.int64)
    regions = Regions(region_stack, none, none, none)
    ports = PortMap(0, none, none, none, none)
    work = Scratch(np.zeros((0, 3), dtype=np.int64), none)
    data = np.zeros(stacks, dtype=np.int64)
    wire = plain_wire(lines)
    for j in range(row.shape[0]):
        counts = RangeCounts(none, none, out[row[j]], data)
        count_range(gpu[j], buffer[j], chunk[j], 1, 0, False, pages, regions, ports, wire, work,
                    counts)  # fmt: skip
