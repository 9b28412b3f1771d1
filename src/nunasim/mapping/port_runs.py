"""The socket's port hash, compiled, for one line and for a run of lines: the flow engine
and the granularity estimate count lines per port without materialising them. It computes
exactly what ``port_hash.hashed_ports`` computes for an array (tested line for line).

A run of consecutive line addresses is counted without visiting its lines:

- ``xor-fold``: cut the run into aligned blocks of ``2^k`` lines. Folding is linear in
  XOR and a block's lines differ only in their ``k`` low bits, so for ``k`` below the slice
  width the block's folded values are the aligned range of ``2^k`` values holding the fold
  of its first line, and for ``k`` at least the width every value of a slice once per
  ``2^width`` lines. A range of consecutive values meets every port ``n // ports`` times
  and then a span of consecutive ports once.
- ``rotation``: an aligned run of ``ports`` lines meets every port once; the partial runs
  at either end are each one span of consecutive ports from their rotation.
"""

from __future__ import annotations

import math

import numpy as np

from nunasim.jit import jit
from nunasim.mapping.port_hash import _GOLDEN

XOR_FOLD, ROTATION = 0, 1
HASHES = {"xor-fold": XOR_FOLD, "rotation": ROTATION}
_MULTIPLIER = np.uint64(_GOLDEN)
_SHIFT = np.uint64(32)


def fold_width(ports: int) -> int:
    """Bits per slice of the XOR fold over ``ports`` ports (as ``xor_fold``)."""
    return 2 * max(1, math.ceil(math.log2(max(ports, 2))))


@jit
def _fold(address, width):
    mask = (np.int64(1) << width) - 1
    folded = np.int64(0)
    rest = address
    while rest > 0:
        folded ^= rest & mask
        rest >>= width
    return folded


@jit
def _rotation(region_base, run, ports):
    key = np.uint64(region_base + run)
    return np.int64((key * _MULTIPLIER) >> _SHIFT) % ports


@jit
def line_port(address, offset, first, ports, width, mode):
    """The port of one line address, given its line number in its region, its region's
    first port and port count, and the fold width for that count."""
    if mode == XOR_FOLD:
        return first + _fold(address, width) % ports
    run = offset // ports
    within = offset - run * ports
    return first + (within + _rotation(address - offset, run, ports)) % ports


@jit
def _largest_power_within(n):
    """The largest power of two at most ``n`` (``n`` >= 1)."""
    n |= n >> 1
    n |= n >> 2
    n |= n >> 4
    n |= n >> 8
    n |= n >> 16
    n |= n >> 32
    return n - (n >> 1)


# A run of lines is at most 2 * 62 aligned blocks, each at most two spans of ports.
MAX_SPANS = 256


@jit
def run_spans(address, offset, lines, ports, width, mode, spans):
    """The ports of the run of ``lines`` line addresses from ``address`` (line ``offset`` of
    its region, of ``ports`` ports) as spans: ``spans[j] = (start, length, times)`` for the
    first returned ``j``, ``times`` lines to each of ``length`` consecutive ports of the
    region from its ``start``-th, wrapping to its first."""
    n = 0
    if mode == XOR_FOLD:
        end = address + lines
        a = address
        while a < end:
            size = _largest_power_within(end - a)
            aligned = a & -a  # the largest power of two dividing a
            if a != 0 and aligned < size:
                size = aligned
            if size >> width:  # whole slices: every value below 2^width, size >> width times
                values = np.int64(1) << width
                times = size >> width
                low = np.int64(0)
            else:
                values = size
                times = 1
                low = _fold(a, width) & -size
            rest = values
            if values >= ports:
                cycles = values // ports
                n = _span(spans, n, 0, ports, times * cycles)
                rest -= cycles * ports
            if rest:
                n = _span(spans, n, low % ports, rest, times)
            a += size
        return n
    base = address - offset
    end = offset + lines
    o = offset
    while o < end:
        run = o // ports
        within = o - run * ports
        if within == 0 and end - o >= ports:
            whole = (end - o) // ports
            n = _span(spans, n, 0, ports, whole)
            o += whole * ports
            continue
        take = min(ports - within, end - o)
        n = _span(spans, n, (within + _rotation(base, run, ports)) % ports, take, 1)
        o += take
    return n


@jit
def _span(spans, n, start, length, times):
    spans[n, 0] = start
    spans[n, 1] = length
    spans[n, 2] = times
    return n + 1
