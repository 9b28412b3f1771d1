"""A socket's physical address space, and the egress port of a line address.

**Layout.** The space is cut into *regions*, one per (segment, domain, stack): segment 0 is
the baseline segment (no domain, one region per stack); then one segment per NAR
granularity in use, with a region for every (domain, stack backing that domain) pair (see
``domains.py``). A line address is ``region << REGION_SHIFT | line``: the high bits name
the region, so the stack that holds a line and the ports that may carry it follow from the
address alone, as the paper's NAR hardware decodes them (section 4.1). ``REGION_SHIFT`` is a
property of this address format (2^40 lines per region), not of the hardware.

**Port hash.** A line of a region whose domain owns ports ``first .. first + P - 1`` (the
baseline: all ports) leaves through port ``first + h(A) mod P``, where ``A`` is the whole
line address and ``h`` one of the socket's ``port_hash`` choices:

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

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from nunasim.hardware import Socket
from nunasim.policies.domains import DomainLayout, domain_layout

REGION_SHIFT = 40
_GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / golden ratio, odd: Fibonacci hashing
_MASK64 = (1 << 64) - 1
_LINE_MASK = (1 << REGION_SHIFT) - 1


@dataclass(frozen=True)
class Region:
    segment: int
    granularity: int  # 1 for the baseline segment
    domain: int  # -1 in the baseline segment
    stack: int
    first_port: int
    ports: int


@dataclass(frozen=True)
class AddressMap:
    socket: Socket
    granularities: tuple[int, ...]  # NAR granularities with a segment, in segment order

    def __post_init__(self) -> None:
        for g in self.granularities:
            self.socket.domain_ports(g, 0)  # refuses an invalid granularity
        if len(set(self.granularities)) != len(self.granularities):
            raise ValueError("each NAR granularity gets one segment")

    @cached_property
    def regions(self) -> tuple[Region, ...]:
        socket, total = self.socket, len(self.socket.ports)
        regions = [Region(0, 1, -1, s, 0, total) for s in range(len(socket.stacks))]
        for segment, g in enumerate(self.granularities, start=1):
            layout = self.layout(g)
            for d in range(g):
                span = layout.ports[d]
                for s in layout.stacks[d]:
                    regions.append(Region(segment, g, d, s, span.start, len(span)))
        return tuple(regions)

    @cached_property
    def _index(self) -> dict[tuple[int, int, int], int]:
        return {(r.segment, r.domain, r.stack): i for i, r in enumerate(self.regions)}

    def layout(self, granularity: int) -> DomainLayout:
        return domain_layout(self.socket, granularity)

    def segment(self, granularity: int | None) -> int:
        """Segment number of a NAR granularity; None is the baseline segment (0)."""
        if granularity is None:
            return 0
        return self.granularities.index(granularity) + 1

    def region(self, segment: int, domain: int, stack: int) -> int:
        try:
            return self._index[(segment, domain, stack)]
        except KeyError:
            raise ValueError(
                f"no region for segment {segment}, domain {domain}, stack {stack}: "
                "the stack does not back that domain"
            ) from None

    def line_address(self, region: int, line: int) -> int:
        return (region << REGION_SHIFT) | line

    def region_of(self, address: int) -> Region:
        return self.regions[address >> REGION_SHIFT]

    def stack_of(self, address: int) -> int:
        return self.region_of(address).stack

    def port_of(self, address: int) -> int:
        return int(self.ports_of(np.array([address], dtype=np.int64))[0])

    # --- the same, for arrays of line addresses ------------------------------------------

    @cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        stack = np.array([r.stack for r in self.regions], dtype=np.int64)
        first = np.array([r.first_port for r in self.regions], dtype=np.int64)
        count = np.array([r.ports for r in self.regions], dtype=np.int64)
        return stack, first, count

    def stacks_of(self, addresses: np.ndarray) -> np.ndarray:
        return self._tables[0][np.asarray(addresses, dtype=np.int64) >> REGION_SHIFT]

    def ports_of(self, addresses: np.ndarray) -> np.ndarray:
        addresses = np.asarray(addresses, dtype=np.int64)
        region = addresses >> REGION_SHIFT
        _, first, count = self._tables
        ports = count[region]
        if self.socket.port_hash == "xor-fold":
            return first[region] + xor_fold(addresses, ports) % ports
        run, offset = np.divmod(addresses & _LINE_MASK, ports)
        key = ((region << REGION_SHIFT) + run).astype(np.uint64)
        rotation = ((key * np.uint64(_GOLDEN)) >> np.uint64(32)).astype(np.int64) % ports
        return first[region] + (offset + rotation) % ports


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
