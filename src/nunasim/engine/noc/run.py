"""Synthetic traffic on one socket's mesh: the NoC model alone, to compare with NoC simulators.

The run is the collective engine's own: every packet is lowered into the packet core's inputs
(``nunasim.engine.packet.core``) and moved by the same event loop, over resources built with
the same link model as the collective engine's (docs/engine.md), so a check of this mode
against published latency-throughput curves is a check of the collective engine's NoC:

- every directed mesh link is a FIFO server: a packet arriving at ``t`` starts at
  ``max(t, free)``, holds the link for ``packet_flits * socket.link_flit_ps`` (its flits
  back to back) and its head reaches the next router ``socket.link_latency_ps(link)`` after
  it started (cut-through; infinite buffers unless the preset asks for credit flow control);
- every router has an injection port before the first link and an ejection port after the
  last, as the collective engine's routers do: FIFO servers that hold a packet for its flits
  at the channel's width and add the socket's endpoint latencies (none, at the link's
  width, unless the preset describes its routers: ``Socket.router``);
- routes are ``socket.path`` (dimension order, X then Y on the shipped presets);
- a packet's tail reaches the destination ``(packet_flits - 1) * socket.flit_spacing_ps``
  after its head.

Traffic (patterns, Bernoulli injection, seeds) is ``nunasim.engine.noc.traffic``; routes,
loads and bounds ``nunasim.engine.noc.bounds``; the lowering onto the core
``nunasim.engine.noc.inputs``; the measurement (BookSim-like: a warm-up, a window whose
packets are measured, a drain), its figures and their accounting check
``nunasim.engine.noc.result``. This module checks a run's parameters and runs it, and
re-exports the names of those modules that the NoC mode's users import from here.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.noc.bounds import (
    channel_bound,
    core_routes,
    link_flits_per_cycle,
    pattern_zero_load_cycles,
    resource_loads,
    uniform_bound,
)
from nunasim.engine.noc.inputs import noc_inputs, noc_resources
from nunasim.engine.noc.result import NocAccountingError, NocResult, NocRun, check_accounting
from nunasim.engine.noc.traffic import (
    RATE_UNITS,
    TRAFFIC_PATTERNS,
    Pattern,
    Traffic,
    as_pattern,
    centre,
    destination_matrix,
    generate_traffic,
    injection_probability,
    permutation_destinations,
    transpose_destinations,
)
from nunasim.engine.packet.engine import run_core
from nunasim.errors import ConfigError
from nunasim.hardware import Socket
from nunasim.units import PS_PER_S, bytes_to_gb

__all__ = [
    "RATE_UNITS",
    "TRAFFIC_PATTERNS",
    "NocAccountingError",
    "NocResult",
    "NocRun",
    "Pattern",
    "Traffic",
    "as_pattern",
    "centre",
    "channel_bound",
    "check_accounting",
    "check_run",
    "core_routes",
    "destination_matrix",
    "generate_traffic",
    "link_flits_per_cycle",
    "noc_inputs",
    "noc_resources",
    "pattern_zero_load_cycles",
    "permutation_destinations",
    "resource_loads",
    "run_noc",
    "transpose_destinations",
    "uniform_bound",
]

# What one run may simulate, refused before anything is allocated: cycles of injection
# (warm-up, window and the drain's injection), and the expected number of packets, each of
# which costs about BYTES_PER_PACKET of arrays in the packet core.
MAX_CYCLES = 10_000_000
MAX_PACKETS = 10_000_000
BYTES_PER_PACKET = 300


def check_run(
    socket: Socket,
    pattern: Pattern,
    rate: float,
    rate_unit: str,
    packet_flits: int,
    cycles: int,
    warmup: int,
    drain: int | None,
) -> None:
    pattern.check(socket.mesh)
    if rate_unit not in RATE_UNITS:
        raise ConfigError(
            f"the rate is in {' or '.join(RATE_UNITS)} per node per cycle, not {rate_unit!r}",
            where="rate_unit",
        )
    if isinstance(rate, bool) or not (0 < rate <= 1):
        raise ConfigError(
            f"the injection rate is in {rate_unit} per node per cycle, in (0, 1]; got {rate}",
            where="rate",
        )
    if isinstance(packet_flits, bool) or int(packet_flits) != packet_flits or packet_flits < 1:
        raise ConfigError(
            f"a packet has at least one flit; got {packet_flits}", where="packet_flits"
        )
    if int(cycles) != cycles or cycles < 1:
        raise ConfigError(f"the measurement needs at least one cycle; got {cycles}", where="cycles")
    if int(warmup) != warmup or warmup < 0:
        raise ConfigError(f"the warm-up must not be negative; got {warmup}", where="warmup")
    if drain is not None and (int(drain) != drain or drain < 1):
        raise ConfigError(f"the drain limit is at least one cycle; got {drain}", where="drain")
    if drain is not None and warmup + cycles + drain > MAX_CYCLES:
        raise ConfigError(
            f"the run would last up to {warmup + cycles + drain:,} cycles with this drain "
            f"limit, more than the limit of {MAX_CYCLES:,}: use a shorter drain",
            where="drain",
        )
    if socket.mesh.routers < 2:
        raise ConfigError("synthetic traffic needs a mesh of at least two routers")
    _check_size(
        socket, pattern, injection_probability(rate, rate_unit, packet_flits), cycles, warmup
    )
    router = socket.router
    if socket.credit_vcs and router is not None and packet_flits > router.buffer_flits:
        raise ConfigError(
            f"a {packet_flits}-flit packet is longer than the {router.buffer_flits}-flit VC "
            "buffers; under credit flow control the model keeps a packet whole in one "
            f"buffer (packets of up to {router.buffer_flits} flits, or deeper buffers)",
            where="packet_flits",
        )


def _check_size(
    socket: Socket, pattern: Pattern, probability: float, cycles: int, warmup: int
) -> None:
    """Refuse, before anything is allocated, a run beyond the limits, with its estimate."""
    horizon = warmup + 2 * cycles
    if horizon > MAX_CYCLES:
        raise ConfigError(
            f"this run would inject for {horizon:,} cycles (warm-up {warmup:,} + window "
            f"{cycles:,} + as many while it drains), more than the limit of {MAX_CYCLES:,}: "
            "use fewer cycles",
            where="warmup" if warmup > cycles else "cycles",
        )
    n = socket.mesh.routers
    sending = float((destination_matrix(socket.mesh, pattern).sum(axis=1) > 0).mean())
    expected = int(n * sending * horizon * probability)
    if expected > MAX_PACKETS:
        fits = int(MAX_PACKETS / (n * sending * probability * 2))
        raise ConfigError(
            f"this run would inject about {expected:,} packets (about "
            f"{bytes_to_gb(expected * BYTES_PER_PACKET):,.1f} GB of arrays), more than the "
            f"limit of {MAX_PACKETS:,}: use a window of at most about {fits:,} cycles at this rate",
            where="cycles",
        )


def _cycle_starts(horizon: int, clock_hz: float) -> np.ndarray:
    """``units.cycles_to_ps`` of cycles 0 .. horizon, at once (the same floats, rounded the
    same way)."""
    cycles = np.arange(horizon + 1, dtype=np.float64)
    return np.floor(cycles * float(PS_PER_S) / clock_hz + 0.5).astype(np.int64)


def run_noc(
    socket: Socket,
    traffic: str | Pattern = "uniform",
    rate: float = 0.1,
    packet_flits: int = 1,
    cycles: int = 10_000,
    warmup: int = 1_000,
    seed: int = 0,
    hotspot_fraction: float = 0.2,
    hotspot: int | None = None,
    *,
    rate_unit: str = "flits",
    drain: int | None = None,
) -> NocRun:
    """Run synthetic traffic on ``socket``'s mesh (see the module docstring). ``traffic`` is
    a pattern name (with ``hotspot_fraction`` and one ``hotspot`` router) or a ``Pattern``;
    ``drain``: stop at most this many cycles after the window (None: once every measured
    packet has arrived)."""
    pattern = as_pattern(traffic, hotspot_fraction, hotspot)
    check_run(socket, pattern, rate, rate_unit, packet_flits, cycles, warmup, drain)
    mesh = socket.mesh
    clock = socket.noc_clock_hz
    end = warmup + cycles
    horizon = end + cycles
    probability = injection_probability(rate, rate_unit, packet_flits)
    packets = generate_traffic(mesh, pattern, probability, horizon, seed)
    cycle_ps = _cycle_starts(max(horizon, end + (drain or 0)), clock)
    inject_ps = cycle_ps[packets.cycle]
    first = int(np.searchsorted(packets.cycle, warmup))
    stop = int(np.searchsorted(packets.cycle, end))
    if stop == first:
        raise ConfigError(
            f"no packet was injected in the {cycles}-cycle window at rate {rate}; "
            "raise the rate or the number of cycles"
        )
    deadline = -1 if drain is None else int(cycle_ps[end + drain])
    inputs = noc_inputs(socket, packets, inject_ps, packet_flits, stop, deadline)
    done = run_core(inputs, kept=frozenset())  # a packet's arrival is all it reads
    head_ps = done.outputs.msg_done
    if deadline < 0 and (head_ps[:stop] < 0).any():
        raise RuntimeError("the NoC run stopped before every measured packet arrived")
    return NocRun(
        socket=socket,
        pattern=pattern,
        rate=float(rate),
        rate_unit=rate_unit,
        packet_flits=int(packet_flits),
        cycles=int(cycles),
        warmup=int(warmup),
        seed=int(seed),
        packets=packets,
        cycle_ps=cycle_ps,
        inject_ps=inject_ps,
        head_ps=head_ps,
        first=first,
        stop=stop,
        events=done.events,
        link_busy_ps=done.res_busy[: mesh.link_slots],
        deadline_ps=deadline,
    )
