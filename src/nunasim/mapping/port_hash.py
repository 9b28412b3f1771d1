"""The port a line leaves its socket by: a hash of its address over its region's ports.

A line of a region whose domain owns ports ``first .. first + P - 1`` (the baseline: all
ports) leaves through port ``first + h(A) mod P``, where ``A`` is the whole line address and
``h`` one of the socket's ``port_hash`` choices:

- ``xor-fold`` (the default, the paper's baseline, section 4.1.1): a static hash of the
  address bits, as a boot-time fabric manager programs it: ``A`` cut into slices of
  ``2 * bitlength(P - 1)`` bits, XORed together. Consecutive lines go to consecutive ports
  (the low slice counts up), but nothing balances one page or one stack against another:
  equal offsets in regions whose numbers differ little land near each other, and a port
  can be hot while another idles.
- ``rotation``: within every aligned run of P lines each port appears exactly once
  (``first + (L + r) mod P`` for offset ``L`` in the region), with a rotation ``r`` (a
  Fibonacci hash of the region and the run number) that changes from run to run and region
  to region: an idealised hash that spreads any aligned run evenly, kept for comparison.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / golden ratio, odd: Fibonacci hashing


def hashed_ports(
    addresses: np.ndarray, offset: np.ndarray, first: np.ndarray, ports: np.ndarray, port_hash: str
) -> np.ndarray:
    """The port of every line address, given each one's line number in its region, and its
    region's first port and port count."""
    if port_hash == "xor-fold":
        return first + xor_fold(addresses, ports) % ports
    run, within = np.divmod(offset, ports)
    key = (addresses - offset + run).astype(np.uint64)  # the region's first line, and the run
    rotation = ((key * np.uint64(_GOLDEN)) >> np.uint64(32)).astype(np.int64) % ports
    return first + (within + rotation) % ports


def xor_fold(addresses: np.ndarray, ports: np.ndarray) -> np.ndarray:
    """The line addresses folded by XOR into slices of ``2 * bitlength(ports - 1)`` bits
    (twice the bits that number the ports, so that ``mod ports`` is nearly unbiased)."""
    width = 2 * np.maximum(1, np.ceil(np.log2(np.maximum(ports, 2))).astype(np.int64))
    mask = (np.int64(1) << width) - 1
    folded = np.zeros_like(addresses)
    rest = addresses.copy()
    while (rest > 0).any():
        folded ^= rest & mask
        rest >>= width
    return folded
