"""The range of every timed quantity of a preset, checked when the preset is read.

The engines keep time in integer picoseconds, a route entry's delay in 32 bits and an
event's time in the 40 bits its heap key leaves (1.1 s); Python turns a cycle or a line's
transfer into picoseconds by rounding. Outside these ranges a quantity rounds to 0 ps (a
1e30 GHz clock), overflows an array (a 1e-30 GHz clock, a latency of 1e30 ns) or cannot be
simulated at all (a line that takes longer than the engines' time range): each is refused
where it is written instead, with its range. A run whose quantities are each in range may
still be too long as a whole; the engines refuse that from its lower bound.
"""

from __future__ import annotations

from nunasim.io.schema import Node
from nunasim.units import (
    PS_PER_MS,
    PS_PER_S,
    format_bandwidth,
    format_flops,
    format_frequency,
    format_size,
    parse_flops,
)
from nunasim.units import format_time as _format_time

# A latency (L1, HBM, switch plane, a hop, a router's stages): at most 1 ms, within the
# 2.1 ms (2**31 - 1 ps) a 32-bit route entry holds as a delay.
MAX_DELAY_PS = PS_PER_MS
# A clock cycle: at least the simulator's 1 ps resolution, at most the longest delay.
MIN_CYCLE_PS = 1
MAX_CLOCK_HZ = PS_PER_S / MIN_CYCLE_PS
MIN_CLOCK_HZ = PS_PER_S / MAX_DELAY_PS
# One line's transfer over a link, a stack or a port: at least 1 ps (a faster channel
# would move a line in no time at all), at most 1 s, within the engines' 1.1 s of time.
MIN_LINE_PS = 1
MAX_LINE_PS = PS_PER_S
# A line is one message of the engines and one row of their tables; a larger one than
# this is no cache line any memory system has.
MAX_LINE_BYTES = 1 << 20
# A socket's compute rate: 1 GFLOPS to 1 ZFLOPS, five orders of magnitude either side of
# the paper's 6.25-25 PFLOPS. Below, a GEMM tile's compute (picoseconds, a 64-bit integer)
# leaves the engines' time range at once; above, a tile of a few MFLOP rounds to no time.
MIN_FLOPS = "1GFLOPS"
MAX_FLOPS = "1000EFLOPS"
# A page: the largest huge page of any MMU, so that page numbers and offsets stay far
# inside the engines' 64-bit addresses.
MAX_PAGE_BYTES = 1 << 30


def format_time(ps: int) -> str:
    # A whole number of seconds as such, not "1000 ms".
    return f"{ps // PS_PER_S} s" if ps >= PS_PER_S and ps % PS_PER_S == 0 else _format_time(ps)


def check_clock(node: Node, key: str, hz: float) -> None:
    if not MIN_CLOCK_HZ <= hz <= MAX_CLOCK_HZ:
        raise node.error(
            f"{format_frequency(hz)} is outside the {format_frequency(MIN_CLOCK_HZ)} to "
            f"{format_frequency(MAX_CLOCK_HZ)} nunasim models (a cycle of "
            f"{format_time(MIN_CYCLE_PS)} to {format_time(MAX_DELAY_PS)})",
            key,
        )


def check_delay(node: Node, key: str, ps: int) -> None:
    if ps > MAX_DELAY_PS:
        raise node.error(
            f"{format_time(ps)} is more than the {format_time(MAX_DELAY_PS)} a latency "
            "can be (a route entry's delay is 32 bits of picoseconds)",
            key,
        )


def check_cycles(node: Node, key: str, cycles: int, clock_hz: float, plus: int = 0) -> None:
    """``cycles`` (with ``plus`` more: a die crossing's hop) of the NoC clock, as a delay:
    compared exactly, so that a count of any size is refused rather than overflowing."""
    # A negative count is the socket's own check ("must not be negative").
    if (cycles + plus) * PS_PER_S > MAX_DELAY_PS * clock_hz:
        count = f"{plus:,} + {cycles:,}" if plus else f"{cycles:,}"
        raise node.error(
            f"{count} cycles at {format_frequency(clock_hz)} is more than the "
            f"{format_time(MAX_DELAY_PS)} a latency can be (a route entry's delay is 32 "
            "bits of picoseconds)",
            key,
        )


def check_flops(node: Node, key: str, flops: float) -> None:
    low, high = parse_flops(MIN_FLOPS), parse_flops(MAX_FLOPS)
    # Zero or less is the socket's own check ("must be positive").
    if flops > 0 and not low <= flops <= high:
        raise node.error(
            f"{format_flops(flops)} is outside the {format_flops(low)} to "
            f"{format_flops(high)} nunasim models (compute times are whole picoseconds)",
            key,
        )


def check_line(node: Node, key: str, line_bytes: int) -> None:
    if not 1 <= line_bytes <= MAX_LINE_BYTES:
        raise node.error(
            f"must be 1 B to {format_size(MAX_LINE_BYTES)}; got {line_bytes:,} B "
            "(a line is one message of the engines)",
            key,
        )


def check_page(node: Node, key: str, page_bytes: int) -> None:
    if not 1 <= page_bytes <= MAX_PAGE_BYTES:
        raise node.error(
            f"must be 1 B to {format_size(MAX_PAGE_BYTES)}; got {page_bytes:,} B "
            "(the largest huge page)",
            key,
        )


def check_bandwidth(
    node: Node, key: str, bytes_per_s: float, line_bytes: int, channels: int = 1
) -> None:
    """``channels`` channels of ``bytes_per_s`` together, each moving one line in
    ``MIN_LINE_PS`` to ``MAX_LINE_PS``."""
    low = channels * line_bytes * PS_PER_S / MAX_LINE_PS
    high = channels * line_bytes * PS_PER_S / MIN_LINE_PS
    # Zero or less is the socket's own check ("must be positive").
    if bytes_per_s > 0 and not low <= bytes_per_s <= high:
        over = f" over {channels:,} links" if channels > 1 else ""
        raise node.error(
            f"{format_bandwidth(bytes_per_s)} is outside the {format_bandwidth(low)} to "
            f"{format_bandwidth(high)}{over} nunasim models for {format_size(line_bytes)} "
            f"lines (a line in {format_time(MIN_LINE_PS)} to {format_time(MAX_LINE_PS)})",
            key,
        )
