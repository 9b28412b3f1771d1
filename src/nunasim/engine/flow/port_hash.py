"""The socket's port hash for one line at a time, compiled: the flow engine counts a
transfer's lines per port without materialising them. It computes exactly what
``nunasim.mapping.port_hash.hashed_ports`` computes for an array (tested line for line)."""

from __future__ import annotations

import math

import numpy as np

from nunasim.engine.jit import jit
from nunasim.mapping.port_hash import _GOLDEN

XOR_FOLD, ROTATION = 0, 1
HASHES = {"xor-fold": XOR_FOLD, "rotation": ROTATION}
_MULTIPLIER = np.uint64(_GOLDEN)
_SHIFT = np.uint64(32)


def fold_width(ports: int) -> int:
    """Bits per slice of the XOR fold over ``ports`` ports (as ``xor_fold``)."""
    return 2 * max(1, math.ceil(math.log2(max(ports, 2))))


@jit(inline=True)
def line_port(address, offset, first, ports, width, mode):
    """The port of one line address, given its line number in its region, its region's
    first port and port count, and the fold width for that count."""
    if mode == XOR_FOLD:
        mask = (np.int64(1) << width) - 1
        folded = np.int64(0)
        rest = address
        while rest > 0:
            folded ^= rest & mask
            rest >>= width
        return first + folded % ports
    run = offset // ports
    within = offset - run * ports
    key = np.uint64(address - offset + run)
    rotation = np.int64((key * _MULTIPLIER) >> _SHIFT) % ports
    return first + (within + rotation) % ports
