"""What a synthetic-traffic run measured, and the checks every run's figures pass.

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

from nunasim.engine.noc.bounds import (
    channel_bound,
    core_routes,
    link_flits_per_cycle,
    pattern_zero_load_cycles,
    resource_flit_ps,
)
from nunasim.engine.noc.traffic import Pattern, Traffic
from nunasim.hardware import Socket
from nunasim.units import ps_to_cycles

# The run is called saturated when accepted throughput falls below this share of the
# offered load...
SATURATION_ACCEPTED_SHARE = 0.95
# ...or when the mean queueing delay (latency above the packet's own zero-load latency)
# of the window's last quarter exceeds its first quarter's by more than this share of the
# mean zero-load latency: the queues are still growing.
SATURATION_GROWTH_SHARE = 0.25


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

    @cached_property
    def drained(self) -> bool:
        return bool(self._arrived.all())

    # What the figures and their checks read several times over a run's 1.5 M packets,
    # worked out once: which measured packets arrived, their zero-load paths, the last
    # measured flit's arrival.
    @cached_property
    def _arrived(self) -> np.ndarray:
        return self.head_ps[self.measured] >= 0

    @cached_property
    def _paths_ps(self) -> np.ndarray:
        m = self.measured
        return self.socket.router_paths.latency_ps[self.packets.src[m], self.packets.dst[m]]

    @cached_property
    def _last_ps(self) -> int:
        return int((self.head_ps[self.measured] + self.tail_ps).max())

    @property
    def tail_ps(self) -> int:
        """Head-to-tail spacing of a packet: its other flits, back to back."""
        return (self.packet_flits - 1) * self.socket.flit_spacing_ps

    def latency_ps(self) -> np.ndarray:
        """Injection to last flit's arrival, per measured packet that arrived."""
        m = self.measured
        return (self.head_ps[m] + self.tail_ps - self.inject_ps[m])[self._arrived]

    def zero_load_ps(self) -> np.ndarray:
        """The same packets' latency in an empty network: injection port, path, ejection
        port, tail."""
        return self.socket.endpoint_latency_ps + self._paths_ps[self._arrived] + self.tail_ps

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
        pair = (self.packets.src[m] * n + self.packets.dst[m])[self._arrived]
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
        return max(end - begin, self._last_ps - begin - self.slack_ps())

    def slack_ps(self) -> int:
        """What ``delivery_ps`` leaves out after the last arrival."""
        if not self.drained:
            return 0
        return int(self._paths_ps.max()) + self.socket.endpoint_latency_ps + self.tail_ps

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
        delivered = int(self._arrived.sum())
        accepted = (int(self.packet_flits) * delivered * int(end_ps - begin)) / (
            int(n) * int(self.cycles) * int(delivery)
        )
        ejected = self.flits_arrived(*self.window_ps) / (n * self.cycles)

        end = self.warmup + self.cycles
        quarter = max(self.cycles // 4, 1)
        injected = self.packets.cycle[self.measured][self._arrived]
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
        drain_end = self._last_ps if drained else self.deadline_ps
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
