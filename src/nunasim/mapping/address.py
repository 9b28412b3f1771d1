"""A socket's physical address space, and the egress port of a line address.

**Layout.** The space is cut into *regions*, one per (segment, domain, stack): segment 0 is
the baseline segment (no domain, one region per stack); then one segment per NAR
granularity in use, with a region for every (domain, stack backing that domain) pair (see
``domains``). A line address is ``region << REGION_SHIFT | line``: the high bits name
the region, so the stack that holds a line and the ports that may carry it follow from the
address alone, as the paper's NAR hardware decodes them (section 4.1). ``REGION_SHIFT`` is a
property of this address format (2^40 lines per region), not of the hardware.

The port a line leaves by is a hash of its address over its region's ports
(``port_hash``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

import numpy as np

from nunasim.hardware import Socket
from nunasim.mapping.domains import DomainLayout, domain_layout
from nunasim.mapping.port_hash import hashed_ports

REGION_SHIFT = 40
_LINE_MASK = (1 << REGION_SHIFT) - 1

Lines = TypeVar("Lines", int, np.ndarray)


@dataclass(frozen=True)
class Region:
    """One region of the address space: the lines of one stack in one segment and domain,
    and the ports they may leave by."""

    segment: int
    granularity: int  # 1 for the baseline segment
    domain: int  # -1 in the baseline segment
    stack: int
    first_port: int
    ports: int


@dataclass(frozen=True)
class AddressMap:
    """A socket's address space: the baseline segment and one segment per NAR granularity
    in use, and the decoding of a line address into its region, stack and port."""

    socket: Socket
    granularities: tuple[int, ...]  # NAR granularities with a segment, in segment order

    def __post_init__(self) -> None:
        for g in self.granularities:
            self.socket.domain_ports(g, 0)  # refuses an invalid granularity
        if len(set(self.granularities)) != len(self.granularities):
            raise ValueError("each NAR granularity gets one segment")

    @cached_property
    def regions(self) -> tuple[Region, ...]:
        """Every region, by region number."""
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
        """The NAR domains of ``granularity`` on this socket."""
        return domain_layout(self.socket, granularity)

    def segment(self, granularity: int | None) -> int:
        """Segment number of a NAR granularity; None is the baseline segment (0)."""
        if granularity is None:
            return 0
        return self.granularities.index(granularity) + 1

    def region(self, segment: int, domain: int, stack: int) -> int:
        """The number of the region of (segment, domain, stack)."""
        try:
            return self._index[(segment, domain, stack)]
        except KeyError:
            raise ValueError(
                f"no region for segment {segment}, domain {domain}, stack {stack}: "
                "the stack does not back that domain"
            ) from None

    def line_address(self, region: Lines, line: Lines) -> Lines:
        """The address of line ``line`` of region ``region`` (numbers or arrays of them)."""
        return (region << REGION_SHIFT) | line

    def region_of(self, address: int) -> Region:
        """The region a line address lies in."""
        return self.regions[address >> REGION_SHIFT]

    def stack_of(self, address: int) -> int:
        """The stack that holds a line address."""
        return self.region_of(address).stack

    def port_of(self, address: int) -> int:
        """The port a line address leaves its socket by."""
        return int(self.ports_of(np.array([address], dtype=np.int64))[0])

    # --- the same, for arrays of line addresses ------------------------------------------

    @cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        stack = np.array([r.stack for r in self.regions], dtype=np.int64)
        first = np.array([r.first_port for r in self.regions], dtype=np.int64)
        count = np.array([r.ports for r in self.regions], dtype=np.int64)
        return stack, first, count

    def stacks_of(self, addresses: np.ndarray) -> np.ndarray:
        """``stack_of`` for an array of line addresses."""
        return self._tables[0][np.asarray(addresses, dtype=np.int64) >> REGION_SHIFT]

    def ports_of(self, addresses: np.ndarray) -> np.ndarray:
        """``port_of`` for an array of line addresses."""
        addresses = np.asarray(addresses, dtype=np.int64)
        region = addresses >> REGION_SHIFT
        _, first, count = self._tables
        return hashed_ports(
            addresses, addresses & _LINE_MASK, first[region], count[region], self.socket.port_hash
        )
