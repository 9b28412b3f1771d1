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

In the core each packet is a step of its source router's threadblock, released at the
packet's injection time, with one message over injection port, links and ejection port that
is done when it arrives (no acknowledgement); the routers have no outstanding-request window
(the injection is open-loop), and a last step waiting for every packet injected before the
end of the measurement window (or the drain limit) ends the run.

Traffic (patterns, Bernoulli injection, seeds) is ``nunasim.engine.noc_traffic``; routes,
loads and bounds ``nunasim.engine.noc_bounds``.

Measurement (BookSim-like): the run injects for ``warmup + cycles + cycles`` cycles (the last
stretch keeps the network loaded while the measured packets drain) and stops as soon as every
packet injected in the measurement window ``[warmup, warmup + cycles)`` has arrived, or at the
drain limit. Latency is measured for those packets, from their injection (creation, so source
queueing counts) to the arrival of their last flit. Offered load is their flits per router
per window cycle; accepted throughput is the same flits per router per cycle of the time the
network took to deliver them (see ``NocRun.delivery_ps``), so that it measures what the
network carries of the pattern's mix: never above the offered load, and never above what the
busiest resource can serve (``check_accounting`` verifies both on every run).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np

from nunasim.engine.noc_bounds import (
    channel_bound,
    core_routes,
    link_flits_per_cycle,
    pattern_zero_load_cycles,
    resource_flit_ps,
    resource_loads,
    uniform_bound,
)
from nunasim.engine.noc_traffic import (
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
from nunasim.engine.packet.core import EJECT, INJECT, LINK, READ, CoreInputs
from nunasim.engine.packet.engine import resource_rows, run_core
from nunasim.errors import ConfigError
from nunasim.hardware import Socket
from nunasim.units import PS_PER_S, ps_to_cycles

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

# The run is called saturated when accepted throughput falls below this share of the
# offered load...
SATURATION_ACCEPTED_SHARE = 0.95
# ...or when the mean queueing delay (latency above the packet's own zero-load latency)
# of the window's last quarter exceeds its first quarter's by more than this share of the
# mean zero-load latency: the queues are still growing.
SATURATION_GROWTH_SHARE = 0.25
# What one run may simulate, refused before anything is allocated: cycles of injection
# (warm-up, window and the drain's injection), and the expected number of packets, each of
# which costs about BYTES_PER_PACKET of arrays in the packet core.
MAX_CYCLES = 10_000_000
MAX_PACKETS = 10_000_000
BYTES_PER_PACKET = 300


class NocAccountingError(RuntimeError):
    """A run's figures break what any network obeys (a bug, never bad input)."""


@dataclass(frozen=True)
class NocResult:
    """What a synthetic-traffic run measured. Latencies are in NoC cycles, throughputs in
    flits per router per NoC cycle."""

    traffic: str
    rate: float  # nominal injection rate asked for, in ``rate_unit`` per node per cycle
    packet_flits: int
    routers: int
    cycles: int  # measurement window
    warmup: int
    seed: int
    offered_flits_per_node_cycle: float  # flits injected in the window
    accepted_flits_per_node_cycle: float  # the window's flits over the time to deliver them
    avg_latency_cycles: float
    p99_latency_cycles: float
    max_latency_cycles: float
    zero_load_latency_cycles: float  # mean zero-load latency of the measured packets
    latency_growth_cycles: float  # queueing delay, last quarter of the window minus first
    packets: int  # packets measured
    saturated: bool
    channel_bound_flits_per_node_cycle: float  # channel-load bound for this pattern
    link_flits_per_cycle: float  # what one link carries per NoC cycle
    events: int
    rate_unit: str = "flits"
    pattern: str = ""  # the pattern as stated in the output (self-traffic, hotspots)
    ejected_flits_per_node_cycle: float = 0.0  # flits of any packet ejected in the window
    drained: bool = True  # every measured packet arrived before the drain limit
    drain_cycles: int = 0  # cycles after the window until the last measured packet arrived
    pattern_zero_load_cycles: float = 0.0  # the pattern's expected zero-load latency

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


# --- lowering onto the packet core ----------------------------------------------------


def noc_resources(socket: Socket, packet_flits: int) -> np.ndarray:
    """The core's resource table: the mesh's link slots, then every router's injection port,
        then its ejection port. A packet holds each for all its flits, back to back. Under credit
    flow control the links and injection channels feed input buffers of ``virtual_channels``
    VCs of ``buffer_flits`` each."""
    mesh = socket.mesh
    ports = mesh.routers
    counts = [mesh.link_slots, ports, ports]
    flit_ps = [socket.link_flit_ps, socket.injection_flit_ps, socket.ejection_flit_ps]
    occ = packet_flits * np.repeat(np.array(flit_ps, dtype=np.int64), counts)
    lat = np.concatenate(
        [
            socket.link_latencies_ps,
            np.full(ports, socket.injection_latency_ps, dtype=np.int64),
            np.full(ports, socket.ejection_latency_ps, dtype=np.int64),
        ]
    )
    kind = np.repeat([LINK, INJECT, EJECT], [mesh.link_slots, ports, ports])
    # The links and the injection channels feed the routers' input buffers.
    vcs = np.where(kind == EJECT, 0, socket.credit_vcs)
    credit_ps = np.repeat(
        [socket.link_credit_ps, socket.injection_latency_ps, 0], [mesh.link_slots, ports, ports]
    )
    # Wormhole: each of those buffers holds ``buffer_flits`` per VC.
    depth = socket.router.buffer_flits if socket.router is not None else 0
    buf_flits = np.where(vcs > 0, depth, 0)
    return resource_rows(
        occ,
        lat,
        kind,
        vcs,
        np.where(vcs > 0, credit_ps, 0),
        buf_flits,
        resource_flit_ps(socket),
    )


def noc_inputs(
    socket: Socket,
    packets: Traffic,
    inject_ps: np.ndarray,
    packet_flits: int,
    stop: int,
    deadline_ps: int = -1,
) -> CoreInputs:
    """The core's inputs for ``packets`` injected at ``inject_ps``; the run ends once packets
    ``0 .. stop - 1`` have arrived, or at ``deadline_ps`` if that is not negative.

    Packet p is step p (of its source router's threadblock), released at ``inject_ps[p]``,
    line operation p and message p: a read-kind message, done when it arrives, whose line
    operation delivers nothing. Step ``len(packets)`` waits for the first ``stop``; with a
    deadline, an empty step released at the deadline and it both release the last step,
    which waits for either.
    """
    mesh = socket.mesh
    count = len(inject_ps)
    every = np.arange(count, dtype=np.int64)
    route_start, route = core_routes(socket)
    none = np.zeros(0, dtype=np.int64)

    def per_packet(value: int) -> np.ndarray:
        return np.full(count, value, dtype=np.int64)

    measured_done = count
    if deadline_ps < 0:
        waits, extra_succ, extra_succs = [stop], [0], none
        timed_step, timed_at = every, inject_ps
    else:  # all measured packets done, the deadline, and the end waiting for one of them
        waits, extra_succ, extra_succs = [stop, 0, 1], [1, 1, 0], np.array([count + 2] * 2)
        at = int(np.searchsorted(inject_ps, deadline_ps, side="right"))
        timed_step = np.insert(every, at, count + 1)
        timed_at = np.insert(inject_ps, at, deadline_ps)
    extra = len(waits)
    succ_counts = np.concatenate([(every < stop).astype(np.int64), extra_succ])
    return CoreInputs(
        res=noc_resources(socket, packet_flits),
        tb_cu=np.arange(mesh.routers, dtype=np.int64),
        step_tb=np.append(packets.src, np.zeros(extra, dtype=np.int64)),
        step_wait=np.append(per_packet(0), waits),
        step_compute_ps=np.zeros(count + extra, dtype=np.int64),
        timed_step=timed_step,
        timed_at=timed_at,
        succ_start=np.concatenate([[0], np.cumsum(succ_counts)]).astype(np.int64),
        succ=np.append(np.full(stop, measured_done, dtype=np.int64), extra_succs),
        lineop_start=np.append(np.arange(count + 1, dtype=np.int64), np.full(extra, count)),
        lineop_step=every,
        lineop_compute_ps=per_packet(0),
        lineop_msgs=np.stack([every, every + 1, every + 1], axis=1),
        flag_start=np.zeros(count + extra + 1, dtype=np.int64),
        flag_msg=none,
        msg_kind=per_packet(READ),
        msg_lineop=every,
        msg_cu=packets.src,
        msg_target=per_packet(-1),
        arrival_lines=none,
        release_start=np.zeros(1, dtype=np.int64),
        release=none,
        msg_ack_ps=per_packet(0),
        msg_pre_ps=per_packet(0),
        msg_route=packets.src * mesh.routers + packets.dst,
        route_start=route_start,
        route=route,
        ncus=mesh.routers,
        window=count + 1,  # open-loop injection: no request window
        stop_step=count + extra - 1,
        stop_ps=-1,
    )


# --- a run -----------------------------------------------------------------------------


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
    if socket.credit_vcs and router is not None and packet_flits > 2 * router.buffer_flits:
        raise ConfigError(
            f"a {packet_flits}-flit packet spans more than two input buffers of "
            f"{router.buffer_flits} flits; the wormhole model holds at most two "
            f"(packets of up to {2 * router.buffer_flits} flits)",
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
            f"{expected * BYTES_PER_PACKET / 1e9:,.1f} GB of arrays), more than the limit of "
            f"{MAX_PACKETS:,}: use a window of at most about {fits:,} cycles at this rate",
            where="cycles",
        )


@dataclass(frozen=True, eq=False)
class NocRun:
    """A finished run: every packet's injection and arrival, and what the core counted.

    Packets ``first .. stop - 1`` are the measured ones (injected in the window); every one
    of them has arrived (``head_ps >= 0``) unless the run hit its drain limit; later ones
    arrived if ``head_ps >= 0``.
    """

    socket: Socket
    pattern: Pattern
    rate: float
    rate_unit: str
    packet_flits: int
    cycles: int
    warmup: int
    seed: int
    packets: Traffic
    cycle_ps: np.ndarray  # int64 start of every cycle 0 .. horizon
    inject_ps: np.ndarray  # int64 per packet
    head_ps: np.ndarray  # int64 arrival of each packet's head, -1 if it did not arrive
    first: int
    stop: int
    events: int
    link_busy_ps: np.ndarray  # int64 per link slot, over the whole run
    deadline_ps: int  # the drain limit; -1: none

    @property
    def traffic(self) -> str:
        return self.pattern.traffic

    @property
    def hotspot_fraction(self) -> float:
        return self.pattern.hotspot_fraction

    @property
    def measured(self) -> slice:
        return slice(self.first, self.stop)

    @property
    def drained(self) -> bool:
        return bool((self.head_ps[self.measured] >= 0).all())

    @property
    def tail_ps(self) -> int:
        """Head-to-tail spacing of a packet: its other flits, back to back."""
        return (self.packet_flits - 1) * self.socket.flit_spacing_ps

    def latency_ps(self) -> np.ndarray:
        """Injection to last flit's arrival, per measured packet that arrived."""
        m = self.measured
        arrived = self.head_ps[m] >= 0
        return (self.head_ps[m] + self.tail_ps - self.inject_ps[m])[arrived]

    def zero_load_ps(self) -> np.ndarray:
        """The same packets' latency in an empty network: injection port, path, ejection
        port, tail."""
        m = self.measured
        arrived = self.head_ps[m] >= 0
        src, dst = self.packets.src[m][arrived], self.packets.dst[m][arrived]
        path = self.socket.router_paths.latency_ps[src, dst]
        return self.socket.endpoint_latency_ps + path + self.tail_ps

    def flits_arrived(self, begin_ps: int, end_ps: int, mask: np.ndarray | None = None) -> int:
        """Flits arriving in ``[begin_ps, end_ps)`` (flit k of a packet arrives at its head's
        arrival plus k flit times), of the packets selected by ``mask`` if given."""
        chosen = self.head_ps >= 0
        if mask is not None:
            chosen &= mask
        heads = self.head_ps[chosen]
        flit_ps = self.socket.flit_spacing_ps

        def before(t: int) -> np.ndarray:  # ceil((t - head) / flit), clipped to the packet
            return np.clip(-((heads - t) // flit_ps), 0, self.packet_flits)

        return int((before(end_ps) - before(begin_ps)).sum())

    @property
    def window_ps(self) -> tuple[int, int]:
        return int(self.cycle_ps[self.warmup]), int(self.cycle_ps[self.warmup + self.cycles])

    def delivered_flits_per_resource(self) -> np.ndarray:
        """Flits of the measured packets that arrived, by resource of the run they crossed."""
        n = self.socket.mesh.routers
        m = self.measured
        arrived = self.head_ps[m] >= 0
        pair = (self.packets.src[m] * n + self.packets.dst[m])[arrived]
        start, route = core_routes(self.socket)
        per_entry = np.repeat(np.bincount(pair, minlength=n * n), np.diff(start))
        resources = 2 * n + self.socket.mesh.link_slots
        served = np.bincount(route[:, 0], weights=per_entry, minlength=resources)
        return np.rint(served).astype(np.int64) * self.packet_flits

    def delivery_ps(self) -> int:
        """The time the network took to deliver the window's packets, ``D``: from the start
        of the window to the last one's last flit, less the longest zero-load latency among
        them (``slack_ps``: a packet injected at the window's end needs that much anyway),
        and at least the window. Delivering the offered mix takes at least as long as the
        busiest resource takes to serve its part of it, so the throughput the window's
        flits / (routers D) measures stays below the channel bounds (``check_accounting``).

        A run cut at its drain limit has not delivered them all: ``D`` is then the time from
        the window's start to the limit, over which the packets that did arrive count."""
        begin, end = self.window_ps
        if not self.drained:
            return self.deadline_ps - begin
        last = int((self.head_ps[self.measured] + self.tail_ps).max())
        return max(end - begin, last - begin - self.slack_ps())

    def slack_ps(self) -> int:
        """What ``delivery_ps`` leaves out after the last arrival."""
        if not self.drained:
            return 0
        m = self.measured
        path = self.socket.router_paths.latency_ps[self.packets.src[m], self.packets.dst[m]]
        return int(path.max()) + self.socket.endpoint_latency_ps + self.tail_ps

    def __post_init__(self) -> None:
        # Every run is checked as it is made, whether or not its result is asked for.
        self.result()

    def result(self) -> NocResult:
        """What the run measured (computed once), checked by ``check_accounting``."""
        return self._result

    @cached_property
    def _result(self) -> NocResult:
        socket = self.socket
        clock = socket.noc_clock_hz
        latency = ps_to_cycles(self.latency_ps(), clock)
        zero_load = ps_to_cycles(self.zero_load_ps(), clock)
        n = socket.mesh.routers
        flits = int(self.packet_flits) * int(self.stop - self.first)
        offered = flits / (int(n) * int(self.cycles))
        begin, end_ps = self.window_ps
        # The delivered share of the same flits over the delivery time instead of the
        # window, as one quotient of exact integers: rounded once, it can never come out
        # above ``offered`` when the true ratio is at most 1 (chained float products can).
        delivery = self.delivery_ps()
        delivered = int((self.head_ps[self.measured] >= 0).sum())
        accepted = (int(self.packet_flits) * delivered * int(end_ps - begin)) / (
            int(n) * int(self.cycles) * int(delivery)
        )
        ejected = self.flits_arrived(*self.window_ps) / (n * self.cycles)

        end = self.warmup + self.cycles
        quarter = max(self.cycles // 4, 1)
        arrived = self.head_ps[self.measured] >= 0
        injected = self.packets.cycle[self.measured][arrived]
        queueing = latency - zero_load
        early = queueing[injected < self.warmup + quarter]
        late = queueing[injected >= end - quarter]
        growth = float(late.mean() - early.mean()) if len(early) and len(late) else 0.0
        mean_zero_load = float(zero_load.mean()) if len(zero_load) else float("nan")
        drained = self.drained
        saturated = (
            not drained
            or accepted < SATURATION_ACCEPTED_SHARE * offered
            or growth > SATURATION_GROWTH_SHARE * mean_zero_load
        )
        last = int((self.head_ps[self.measured] + self.tail_ps).max())
        drain_end = last if drained else self.deadline_ps
        result = NocResult(
            traffic=self.traffic,
            rate=float(self.rate),
            packet_flits=int(self.packet_flits),
            routers=n,
            cycles=int(self.cycles),
            warmup=int(self.warmup),
            seed=int(self.seed),
            offered_flits_per_node_cycle=offered,
            accepted_flits_per_node_cycle=accepted,
            avg_latency_cycles=float(latency.mean()) if len(latency) else float("nan"),
            p99_latency_cycles=float(np.percentile(latency, 99)) if len(latency) else float("nan"),
            max_latency_cycles=float(latency.max()) if len(latency) else float("nan"),
            zero_load_latency_cycles=mean_zero_load,
            latency_growth_cycles=growth,
            packets=self.stop - self.first,
            saturated=bool(saturated),
            channel_bound_flits_per_node_cycle=channel_bound(socket, self.pattern),
            link_flits_per_cycle=link_flits_per_cycle(socket),
            events=self.events,
            rate_unit=self.rate_unit,
            pattern=self.pattern.describe(socket.mesh),
            ejected_flits_per_node_cycle=ejected,
            drained=drained,
            pattern_zero_load_cycles=pattern_zero_load_cycles(
                socket, self.pattern, self.packet_flits
            ),
            drain_cycles=max(0, int(np.ceil(ps_to_cycles(drain_end - self.window_ps[1], clock)))),
        )
        check_accounting(self, result)
        return result


def check_accounting(run: NocRun, result: NocResult) -> None:
    """Raise ``NocAccountingError`` unless the figures obey what any network obeys:

    - accepted <= offered (the network delivers no more than the window's packets);
    - every resource e served the F_e delivered flits of the window through it one flit
      time f_e apart, starting no earlier than the window, so the last arrival comes at
      least F_e f_e - f_e after the window opens: F_e f_e <= D + Z + f_e, with D the
      delivery time and Z the slack subtracted from it (``NocRun.delivery_ps``). This is
      accepted <= the resource's bound (its capacity over its share of the flits) up to
      (Z + f_e) / D;
    - no ejection port received more flits in the window than it serves in it, plus the
      one packet that may straddle the window's start.
    """
    if result.accepted_flits_per_node_cycle > result.offered_flits_per_node_cycle * (1 + 1e-12):
        raise NocAccountingError(
            f"accepted {result.accepted_flits_per_node_cycle} flits/node/cycle is above the "
            f"offered {result.offered_flits_per_node_cycle}"
        )
    flit_ps = resource_flit_ps(run.socket)
    served = run.delivered_flits_per_resource() * flit_ps
    allowed = run.delivery_ps() + run.slack_ps() + flit_ps
    over = np.nonzero(served > allowed)[0]
    if len(over):
        raise NocAccountingError(
            f"resource {int(over[0])} served {int(served[over[0]])} ps of the window's flits, "
            f"more than the {int(allowed[over[0]])} ps it had"
        )
    begin, end = run.window_ps
    n = run.socket.mesh.routers
    per_port = (end - begin) // run.socket.ejection_flit_ps + run.packet_flits
    if result.ejected_flits_per_node_cycle * n * run.cycles > n * per_port + 1e-6:
        raise NocAccountingError(
            f"{result.ejected_flits_per_node_cycle} flits/node/cycle ejected, more than the "
            "ejection channels carry"
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
    done = run_core(noc_inputs(socket, packets, inject_ps, packet_flits, stop, deadline))
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
