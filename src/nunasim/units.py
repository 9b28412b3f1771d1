"""The one place that converts units.

Conventions used everywhere else:
- time is an integer number of picoseconds (``int``);
- sizes are integer bytes;
- bandwidths are bytes per second (``float``), per direction;
- clock frequencies are hertz (``float``); compute rates are FLOP per second (``float``).

Size strings follow SI and IEC: ``kB``/``MB``/``GB``/``TB`` are powers of 1000 and
``KiB``/``MiB``/``GiB``/``TiB`` powers of 1024 (``KB`` is read as 1000, as storage vendors
write it). Bandwidth strings are sizes per second (``50GB/s``). A lower-case ``b`` (bits) is
refused rather than guessed at.
"""

from __future__ import annotations

import math
import numbers
import operator
import re

from nunasim.errors import ConfigError, quote

PS_PER_NS = 1_000
PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000
PS_PER_S = 1_000_000_000_000
# Seconds in a picosecond, for a product (``ps * SECONDS_PER_PS``, as the LLM study's
# throughputs have always been computed: it can differ from ``ps / PS_PER_S`` in the last bit).
SECONDS_PER_PS = 1e-12

_SIZE_FACTORS = {
    "": 1,
    "B": 1,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}
_TIME_FACTORS_PS = {
    "ps": 1,
    "ns": PS_PER_NS,
    "us": PS_PER_US,
    "µs": PS_PER_US,
    "ms": PS_PER_MS,
    "s": PS_PER_S,
}
_FREQ_FACTORS = {"Hz": 1.0, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9, "THz": 1e12}
_FLOPS_FACTORS = {
    "FLOPS": 1.0,
    "kFLOPS": 1e3,
    "MFLOPS": 1e6,
    "GFLOPS": 1e9,
    "TFLOPS": 1e12,
    "PFLOPS": 1e15,
    "EFLOPS": 1e18,
}

_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ/]*)\s*$")


def _split(text: str, what: str) -> tuple[float, str]:
    match = _QUANTITY.match(text)
    if not match:
        raise ConfigError(f"{quote(text)} is not a {what} (expected a number and a unit)")
    number = float(match.group(1))
    if not math.isfinite(number):
        raise ConfigError(f"{quote(text)} is not a finite {what}")
    return number, match.group(2)


def as_whole(value: object) -> int | None:
    """``value`` as an int when Python would index with it (an int, a NumPy integer), but
    not a bool; None for anything else (8.5, "7", True), for the caller's own message."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        return None
    return operator.index(value)


def _number(value: object, what: str) -> float | None:
    """The value itself when it is a plain number, None when it is a string to parse."""
    if isinstance(value, bool):
        raise ConfigError(f"{quote(value)} is not a {what}")
    # numbers.Real: NumPy's integers and floats too, as a caller's arrays give them.
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise ConfigError(f"{quote(value)} is not a finite {what}")
        return float(value)
    if isinstance(value, str):
        return None
    raise ConfigError(f"{quote(value)} is not a {what}")


# --- sizes -------------------------------------------------------------------------------


def parse_size(value: object) -> int:
    """Bytes from ``"100kB"``, ``"1MB"``, ``"1GiB"``, ``"256B"``, ``"4096"`` or an int."""
    number = _number(value, "size")
    if number is None:
        mantissa, unit = _split(str(value), "size")
        if unit.lower().endswith("b") and not unit.endswith("B"):
            raise ConfigError(
                f"{quote(value)}: lower-case 'b' means bits; write bytes as 'B' (e.g. 1MB)"
            )
        if unit not in _SIZE_FACTORS:
            known = ", ".join(u for u in _SIZE_FACTORS if u)
            raise ConfigError(f"{quote(value)}: unknown size unit {quote(unit)} (known: {known})")
        number = mantissa * _SIZE_FACTORS[unit]
    nbytes = round(number)
    if abs(number - nbytes) > 1e-9 * max(1.0, abs(number)):
        raise ConfigError(f"{quote(value)} is not a whole number of bytes")
    return nbytes


def format_size(nbytes: int) -> str:
    """A short exact name for a byte count: ``1MB``, ``4KiB``, ``100kB``, ``300B``."""
    for unit in ("TB", "GB", "MB", "kB"):
        factor = _SIZE_FACTORS[unit]
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        factor = _SIZE_FACTORS[unit]
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    return f"{nbytes}B"


def format_bytes(nbytes: int) -> str:
    """A byte count in decimal units to three significant figures, as a reader of sizes
    wants them side by side: ``"300 B"``, ``"908 kB"``, ``"4.19 MB"``, ``"1 GB"``."""
    units = ("B", "kB", "MB", "GB", "TB")
    step = 0
    while step + 1 < len(units) and abs(nbytes) >= _SIZE_FACTORS[units[step + 1]]:
        step += 1
    shown = float(f"{nbytes / _SIZE_FACTORS[units[step]]:.3g}")
    if abs(shown) >= 1000 and step + 1 < len(units):  # 999,999,999 B rounds to 1 GB
        step += 1
        shown = float(f"{nbytes / _SIZE_FACTORS[units[step]]:.3g}")
    return f"{shown:g} {units[step]}"


def bytes_to_mb(nbytes: float) -> float:
    """Decimal megabytes in ``nbytes``."""
    return nbytes / 1e6


def bytes_to_gb(nbytes: float) -> float:
    """Decimal gigabytes in ``nbytes``."""
    return nbytes / 1e9


def format_memory(nbytes: int) -> str:
    """An amount of memory to three figures or so: ``"412 MB"``, ``"9.4 GB"``,
    ``"1.6e+22 GB"`` (an estimate, unlike ``format_size``'s exact names)."""
    if nbytes < _SIZE_FACTORS["GB"]:
        return f"{bytes_to_mb(nbytes):,.0f} MB"
    gb = bytes_to_gb(nbytes)
    return f"{gb:,.1f} GB" if nbytes < _SIZE_FACTORS["GB"] * 10**6 else f"{gb:.3g} GB"


# --- time --------------------------------------------------------------------------------


def ns(value: float) -> int:
    """Picoseconds in ``value`` nanoseconds, to the nearest picosecond."""
    return _round_ps(value * PS_PER_NS)


def us(value: float) -> int:
    """Picoseconds in ``value`` microseconds, to the nearest picosecond."""
    return _round_ps(value * PS_PER_US)


def ps_to_ns(ps: int) -> float:
    return ps / PS_PER_NS


def ps_to_us(ps: int) -> float:
    return ps / PS_PER_US


def ps_to_ms(ps: float) -> float:
    # A float divisor, as conversions to ms have always divided: int / int is the exact
    # quotient rounded once, int / float rounds the int first (the same below 2**53 ps).
    return ps / float(PS_PER_MS)


def ps_to_s(ps: int) -> float:
    return ps / PS_PER_S


def s_to_ps(seconds: float) -> float:
    """Picoseconds in ``seconds``, unrounded (``ns`` and ``us`` round to the picosecond)."""
    return seconds * float(PS_PER_S)


def _round_ps(value: float) -> int:
    # Half-up rather than Python's half-to-even, so that a rounding never depends on parity.
    return math.floor(value + 0.5)


def _scaled(value: object, what: str, factors: dict[str, float], example: str) -> float:
    """A number with a required unit from ``factors``, in the factors' base unit."""
    known = ", ".join(factors)
    if _number(value, what) is not None:
        raise ConfigError(f"{quote(value)}: a {what} needs a unit ({known}), e.g. {quote(example)}")
    mantissa, unit = _split(str(value), what)
    if unit not in factors:
        raise ConfigError(f"{quote(value)}: unknown {what} unit {quote(unit)} (known: {known})")
    return mantissa * factors[unit]


def parse_time(value: object) -> int:
    """Picoseconds from ``"500ns"``, ``"1.5us"``, ``"120 ns"``; a unit is required."""
    exact = _scaled(value, "time", _TIME_FACTORS_PS, "500ns")
    ps = _round_ps(exact)
    if abs(exact - ps) > 1e-6:
        raise ConfigError(f"{quote(value)} is finer than the simulator's 1 ps resolution")
    return ps


def format_time(ps: int) -> str:
    """A readable time: ``920 ns``, ``1.32 us``, ``8333 ps``."""
    if abs(ps) >= PS_PER_MS:
        return f"{ps / PS_PER_MS:.4g} ms"
    if abs(ps) >= 10 * PS_PER_US:
        return f"{ps / PS_PER_US:.4g} us"
    if abs(ps) >= PS_PER_NS:
        return f"{ps / PS_PER_NS:.4g} ns"
    return f"{ps} ps"


# --- clocks ------------------------------------------------------------------------------


def parse_frequency(value: object) -> float:
    """Hertz from ``"1.2GHz"``; a unit is required."""
    return _scaled(value, "frequency", _FREQ_FACTORS, "1.2GHz")


def cycles_to_ps(cycles: float, clock_hz: float) -> int:
    """Picoseconds taken by ``cycles`` clock cycles at ``clock_hz``, to the nearest ps."""
    if clock_hz <= 0:
        raise ValueError("clock frequency must be positive")
    return _round_ps(cycles * PS_PER_S / clock_hz)


def ps_to_cycles(ps: int, clock_hz: float) -> float:
    return ps * clock_hz / PS_PER_S


def format_frequency(hz: float) -> str:
    for unit in ("THz", "GHz", "MHz", "kHz"):
        if hz >= _FREQ_FACTORS[unit]:
            return f"{hz / _FREQ_FACTORS[unit]:.4g} {unit}"
    return f"{hz:.4g} Hz"


# --- bandwidth ---------------------------------------------------------------------------


def parse_bandwidth(value: object) -> float:
    """Bytes per second from ``"50GB/s"``, ``"2.5TB/s"``, ``"100GiB/s"``; a unit is required."""
    if _number(value, "bandwidth") is not None:
        raise ConfigError(f"{quote(value)}: a bandwidth needs a unit, e.g. '50GB/s'")
    mantissa, unit = _split(str(value), "bandwidth")
    if not unit.endswith("/s"):
        raise ConfigError(f"{quote(value)}: a bandwidth is a size per second, e.g. '50GB/s'")
    size_unit = unit[:-2]
    if size_unit.lower().endswith("b") and not size_unit.endswith("B"):
        raise ConfigError(
            f"{quote(value)}: lower-case 'b' means bits; write bytes as 'B' (e.g. 50GB/s)"
        )
    if size_unit not in _SIZE_FACTORS or size_unit == "":
        raise ConfigError(
            f"{quote(value)}: unknown bandwidth unit {quote(unit)} (e.g. GB/s, TB/s, GiB/s)"
        )
    return mantissa * _SIZE_FACTORS[size_unit]


def gbps(value: float) -> float:
    """Bytes per second in ``value`` GB/s (decimal gigabytes)."""
    return value * 1e9


def tbps(value: float) -> float:
    """Bytes per second in ``value`` TB/s (decimal terabytes)."""
    return value * 1e12


def transfer_ps(nbytes: int, bytes_per_s: float) -> int:
    """Serialisation time of ``nbytes`` at ``bytes_per_s``, to the nearest picosecond."""
    if bytes_per_s <= 0:
        raise ValueError("bandwidth must be positive")
    return _round_ps(nbytes * PS_PER_S / bytes_per_s)


def format_bandwidth(bytes_per_s: float) -> str:
    """``7.2 TB/s``, ``833.3 GB/s``: decimal units, four significant figures."""
    for unit in ("TB", "GB", "MB", "kB"):
        factor = _SIZE_FACTORS[unit]
        if bytes_per_s >= factor:
            return f"{bytes_per_s / factor:.4g} {unit}/s"
    return f"{bytes_per_s:.4g} B/s"


# --- compute -----------------------------------------------------------------------------


def parse_flops(value: object) -> float:
    """FLOP per second from ``"25PFLOPS"`` or ``"100 TFLOPS"``; a unit is required."""
    return _scaled(value, "compute rate", _FLOPS_FACTORS, "25PFLOPS")


def format_flops(flops: float) -> str:
    for unit in ("EFLOPS", "PFLOPS", "TFLOPS", "GFLOPS"):
        if flops >= _FLOPS_FACTORS[unit]:
            return f"{flops / _FLOPS_FACTORS[unit]:.4g} {unit}"
    return f"{flops:.4g} FLOPS"
