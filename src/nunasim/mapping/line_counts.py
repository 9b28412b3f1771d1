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

import numpy as np

from nunasim.jit import jit
from nunasim.mapping.address import REGION_SHIFT, AddressMap
from nunasim.mapping.port_runs import fold_width, line_port, run_spans
from nunasim.mapping.port_tally import flush, tally_cyclic


def region_columns(amap: AddressMap) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per region of ``amap``, what ``count_lines`` reads of it: its stack, first port, port
    count and the XOR fold's width over that count."""
    regions = amap.regions
    ports = np.array([r.ports for r in regions], dtype=np.int64)
    return (
        np.array([r.stack for r in regions], dtype=np.int64),
        np.array([r.first_port for r in regions], dtype=np.int64),
        ports,
        np.array([fold_width(int(p)) for p in ports], dtype=np.int64),
    )


@jit
def count_lines(
    mgpu,
    buffer,
    chunk,
    count,
    proto,
    crossing,
    offsets,
    page_first,
    region,
    frame,
    region_stack,
    region_first,
    region_ports,
    region_width,
    mode,
    line_bytes,
    page_bytes,
    wire_cum,
    data_cum,
    wire_base,
    extra_start,
    extra_line,
    extra_wire,
    port_pr,
    spans,
    diff,
    run_start,
    run_router,
    run_of_port,
    n_port,
    n_prs,
    n_stack,
    d_stack,
):
    """Add one range's wire lines to the per-port, per (port router, stack) and per-stack
    tables (the latter two with data bytes per stack too)."""
    per_page = page_bytes // line_bytes
    lines = wire_cum.shape[1] - 1
    stacks = n_stack.shape[0]
    pages = page_first[mgpu, buffer]
    weight = wire_base[proto]
    for k in range(chunk, chunk + count):
        # line i of the chunk is line first + i of the buffer, whatever its byte offset
        first = offsets[k] // line_bytes
        page = pages + first // per_page
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
                r = region[page]
                line = frame[page] * per_page + within
                s = region_stack[r]
                n_stack[s] += wire_cum[proto, i + take] - wire_cum[proto, i]
                d_stack[s] += data_cum[proto, i + take] - data_cum[proto, i]
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
                ports = region_ports[q]
                address = (q << REGION_SHIFT) | run_line
                n = run_spans(address, run_line, run_lines, ports, region_width[q], mode, spans)
                for j in range(n):
                    tally_cyclic(region_first[q], ports, spans[j, 0], spans[j, 1],
                                 weight * spans[j, 2], region_stack[q], stacks, diff, n_prs,
                                 run_start, run_router, run_of_port)  # fmt: skip
            run_region, run_line, run_lines = r, line, take
        if not crossing:
            continue
        # the lines that carry other than ``weight`` wire lines, one at a time
        for j in range(extra_start[proto], extra_start[proto + 1]):
            b = first + extra_line[j]
            page = pages + b // per_page
            r = region[page]
            line = frame[page] * per_page + b % per_page
            p = line_port(
                (r << REGION_SHIFT) | line,
                line,
                region_first[r],
                region_ports[r],
                region_width[r],
                mode,
            )
            n_port[p] += extra_wire[j]
            n_prs[port_pr[p] * stacks + region_stack[r]] += extra_wire[j]
    if crossing:
        flush(diff, n_port)


@jit
def lines_per_stack(
    row, gpu, buffer, chunk, lines, offsets, page_first, region, frame, region_stack,
    line_bytes, page_bytes, out,
):  # fmt: skip
    """Add the first ``lines`` lines of each chunk (``gpu``, ``buffer``, ``chunk``) to
    ``out[row, stack]`` of the stack that holds them (a local count: no ports)."""
    stacks = out.shape[1]
    # the plain format's tables: one wire line per line, nothing out of the usual
    wire_cum = np.arange(lines + 1).reshape(1, lines + 1)
    plain, no_extras, none = np.ones(1, np.int64), np.zeros(2, np.int64), np.zeros(0, np.int64)
    data = np.zeros(stacks, dtype=np.int64)
    spans = np.zeros((0, 3), dtype=np.int64)
    for j in range(row.shape[0]):
        count_lines(gpu[j], buffer[j], chunk[j], 1, 0, False, offsets, page_first, region,
                    frame, region_stack, none, none, none, 0, line_bytes, page_bytes, wire_cum,
                    wire_cum, plain, no_extras, none, none, none, spans, none, none, none,
                    none, none, none, out[row[j]], data)  # fmt: skip
