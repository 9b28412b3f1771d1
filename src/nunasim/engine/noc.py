"""Synthetic traffic on one socket's mesh: the NoC model alone, to compare with NoC simulators.

The run is the collective engine's own: every packet is lowered into the packet core's inputs
(``nunasim.engine.packet.core``) and moved by the same event loop, over resources built with
the same link model as the collective engine's (docs/engine.md), so a check of this mode
against published latency-throughput curves is a check of the collective engine's NoC:

- every directed mesh link is a FIFO server: a packet arriving at ``t`` starts at
  ``max(t, free)``, holds the link for ``packet_flits * socket.link_flit_ps`` (its flits
  back to back) and its head reaches the next router ``socket.link_latency_ps(link)`` after
  it started (cut-through, infinite buffers, no back-pressure);
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
end of the measurement window ends the run.

Traffic is Bernoulli: in every NoC cycle every router injects a packet with probability
``rate / packet_flits`` (``rate`` is in flits per node per cycle). All random numbers are
drawn up front from ``numpy.random.default_rng(seed)``; one uniform number per (cycle,
router) decides injection and the destination is drawn for every (cycle, router) slot
whether or not it injects, so that with one seed a higher rate injects a superset of the
packets of a lower one (common random numbers: a load sweep is smooth). The run is
deterministic.

Destinations (``W`` x ``H`` mesh, router ``(x, y)``):

- ``uniform``: uniformly one of the other ``W * H - 1`` routers;
- ``transpose``: ``((y * W) // H, (x * H) // W)``, which is ``(y, x)`` on a square mesh and
  always on the mesh (``y < H`` gives ``y * W // H < W``). On a non-square mesh it is not a
  permutation: on 24 x 6 it is ``(4y, x // 4)``, 36 destinations each fed by up to four
  sources. Routers that map to themselves inject nothing;
- ``hotspot``: with probability ``hotspot_fraction`` the hotspot router (default the
  centre ``(W // 2, H // 2)``), otherwise uniform as above; the hotspot router itself sends
  all its packets uniformly.

Measurement (BookSim-like): the run injects for ``warmup + cycles + cycles`` cycles (the last
stretch keeps the network loaded while the measured packets drain) and stops as soon as every
packet injected before the end of the measurement window has arrived. Latency is measured
for packets injected in the window ``[warmup, warmup + cycles)``, from their injection
(creation, so source queueing counts) to the arrival of their last flit. Accepted
throughput is the number of flits (of any packet) arriving in that window per router per
cycle; offered load the flits injected in it, likewise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from nunasim.engine.packet.core import EJECT, INJECT, LINK, READ, CoreInputs
from nunasim.engine.packet.engine import resource_rows, route_rows, run_core
from nunasim.errors import ConfigError
from nunasim.hardware import Mesh, Socket
from nunasim.units import cycles_to_ps, ps_to_cycles

TRAFFIC_PATTERNS = ("uniform", "transpose", "hotspot")

# Random numbers are drawn this many cycles at a time; part of what a seed means.
_BLOCK_CYCLES = 4096
# The run is called saturated when accepted throughput falls below this share of the
# offered load...
SATURATION_ACCEPTED_SHARE = 0.95
# ...or when the mean queueing delay (latency above the packet's own zero-load latency)
# of the window's last quarter exceeds its first quarter's by more than this share of the
# mean zero-load latency: the queues are still growing.
SATURATION_GROWTH_SHARE = 0.25


@dataclass(frozen=True)
class NocResult:
    """What a synthetic-traffic run measured. Latencies are in NoC cycles, throughputs in
    flits per router per NoC cycle."""

    traffic: str
    rate: float  # nominal injection rate asked for
    packet_flits: int
    routers: int
    cycles: int  # measurement window
    warmup: int
    seed: int
    offered_flits_per_node_cycle: float  # flits injected in the window
    accepted_flits_per_node_cycle: float  # flits arriving in the window
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

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class Traffic:
    """Every packet of a run, in injection order (cycle, then router)."""

    cycle: np.ndarray  # int64 injection cycle
    src: np.ndarray  # int64 router
    dst: np.ndarray  # int64 router


# --- destinations ----------------------------------------------------------------------


def transpose_destinations(mesh: Mesh) -> np.ndarray:
    """Destination router of every router under ``transpose``: (x, y) -> ((y * W) // H,
    (x * H) // W)."""
    routers = np.arange(mesh.routers, dtype=np.int64)
    x, y = routers % mesh.width, routers // mesh.width
    tx, ty = (y * mesh.width) // mesh.height, (x * mesh.height) // mesh.width
    return ty * mesh.width + tx


def centre(mesh: Mesh) -> int:
    return mesh.router(mesh.width // 2, mesh.height // 2)


def destination_matrix(
    mesh: Mesh, traffic: str, hotspot_fraction: float, hotspot: int
) -> np.ndarray:
    """P[s, d]: the probability that a packet injected at ``s`` goes to ``d`` (a row is zero
    for a router that injects nothing)."""
    n = mesh.routers
    uniform = np.full((n, n), 1.0 / (n - 1))
    np.fill_diagonal(uniform, 0.0)
    if traffic == "uniform":
        return uniform
    if traffic == "transpose":
        matrix = np.zeros((n, n))
        matrix[np.arange(n), transpose_destinations(mesh)] = 1.0
        np.fill_diagonal(matrix, 0.0)
        return matrix
    matrix = (1.0 - hotspot_fraction) * uniform
    matrix[:, hotspot] += hotspot_fraction
    matrix[hotspot] = uniform[hotspot]
    return matrix


def generate_traffic(
    socket: Socket,
    traffic: str,
    rate: float,
    packet_flits: int,
    horizon: int,
    seed: int,
    hotspot_fraction: float = 0.2,
    hotspot: int | None = None,
) -> Traffic:
    """Packets injected in cycles ``0 .. horizon - 1`` (see the module's docstring)."""
    mesh = socket.mesh
    n = mesh.routers
    hot = centre(mesh) if hotspot is None else hotspot
    probability = rate / packet_flits
    rng = np.random.default_rng(seed)
    sources = np.arange(n, dtype=np.int64)
    transposed = transpose_destinations(mesh)
    cycles, srcs, dsts = [], [], []
    for first in range(0, horizon, _BLOCK_CYCLES):
        rows = min(_BLOCK_CYCLES, horizon - first)
        inject = rng.random((rows, n)) < probability
        src = np.broadcast_to(sources, (rows, n))
        if traffic == "transpose":
            dst = np.broadcast_to(transposed, (rows, n))
        else:
            pick = rng.integers(0, n - 1, size=(rows, n), dtype=np.int64)
            dst = pick + (pick >= src)
            if traffic == "hotspot":
                to_hot = (rng.random((rows, n)) < hotspot_fraction) & (src != hot)
                dst = np.where(to_hot, hot, dst)
        inject &= dst != src
        row, _ = np.nonzero(inject)
        cycles.append(row.astype(np.int64) + first)
        srcs.append(src[inject])
        dsts.append(dst[inject])
    return Traffic(
        cycle=np.concatenate(cycles) if cycles else np.zeros(0, dtype=np.int64),
        src=np.concatenate(srcs).astype(np.int64) if srcs else np.zeros(0, dtype=np.int64),
        dst=np.concatenate(dsts).astype(np.int64) if dsts else np.zeros(0, dtype=np.int64),
    )


# --- routes and bounds -----------------------------------------------------------------


# Resource numbering of a run: the mesh's link slots, then every router's injection port,
# then every router's ejection port.


def _inject(mesh: Mesh, router: np.ndarray | int) -> np.ndarray | int:
    return mesh.link_slots + router


def _eject(mesh: Mesh, router: np.ndarray | int) -> np.ndarray | int:
    return mesh.link_slots + mesh.routers + router


def core_routes(socket: Socket) -> tuple[np.ndarray, np.ndarray]:
    """The core's routes (CSR start, route rows) of every ordered pair of routers, pair
    ``src * routers + dst``: the source's injection port, the links of ``socket.path``, the
    destination's ejection port."""
    mesh = socket.mesh
    n = mesh.routers
    paths = socket.router_paths
    pairs = np.arange(n * n)
    start = paths.start + 2 * np.arange(n * n + 1)
    resource = np.empty(int(start[-1]), dtype=np.int64)
    sources, destinations = np.divmod(pairs, n)
    resource[start[:-1]] = _inject(mesh, sources)
    resource[start[1:] - 1] = _eject(mesh, destinations)
    # A pair's links sit between its two ports: two entries further per earlier pair.
    owner = np.repeat(pairs, np.diff(paths.start))
    resource[np.arange(len(paths.links)) + 2 * owner + 1] = paths.links
    return start, route_rows(resource, np.zeros(len(resource), dtype=np.int64))


def link_flits_per_cycle(socket: Socket) -> float:
    """Flits one link carries per NoC cycle."""
    return 1.0 / ps_to_cycles(socket.link_flit_ps, socket.noc_clock_hz)


def resource_flits_per_cycle(socket: Socket) -> np.ndarray:
    """Flits every resource of the run (numbered as by ``noc_resources``) carries per NoC
    cycle: the links, then the injection and the ejection channels at their widths."""
    n = socket.mesh.routers
    flit_ps = np.repeat(
        [socket.link_flit_ps, socket.injection_flit_ps, socket.ejection_flit_ps],
        [socket.mesh.link_slots, n, n],
    )
    return 1.0 / ps_to_cycles(flit_ps, socket.noc_clock_hz)


def resource_loads(
    socket: Socket, traffic: str, hotspot_fraction: float = 0.2, hotspot: int | None = None
) -> np.ndarray:
    """Expected flits per NoC cycle on every resource of the run (link slots, then injection
    ports, then ejection ports, as numbered by ``noc_resources``) when every router offers
    one flit per cycle of the pattern (multiply by the rate for the load at that rate)."""
    mesh = socket.mesh
    hot = centre(mesh) if hotspot is None else hotspot
    paths = socket.router_paths
    matrix = destination_matrix(mesh, traffic, hotspot_fraction, hot)
    per_entry = np.repeat(matrix.ravel(), np.diff(paths.start))
    links = np.bincount(paths.links, weights=per_entry, minlength=mesh.link_slots)
    return np.concatenate([links, matrix.sum(axis=1), matrix.sum(axis=0)])


def channel_bound(
    socket: Socket, traffic: str, hotspot_fraction: float = 0.2, hotspot: int | None = None
) -> float:
    """The highest rate (flits/node/cycle) at which no link, injection port or ejection port
    is offered more than it carries (B = link flits per cycle, unless a preset gives the
    channels other widths): the smallest capacity / load over the loaded resources. An
    injection port's load is 1 (its router's own rate), so the bound is at most its width."""
    loads = resource_loads(socket, traffic, hotspot_fraction, hotspot)
    loaded = loads > 0
    return float((resource_flits_per_cycle(socket)[loaded] / loads[loaded]).min())


def uniform_bound(mesh: Mesh, link_flits: float) -> float:
    """Closed form of ``channel_bound`` for uniform traffic and dimension-order routing.

    Of the N = W * H routers, the x-link from column c to c + 1 in one row carries the
    packets of the c + 1 routers of that row left of the cut to the (W - 1 - c) * H routers
    right of it: (c + 1) (W - 1 - c) H r / (N - 1) flits per cycle at rate r. The middle
    cut is the worst, floor(W/2) ceil(W/2) H r / (N - 1), so r <= B (N - 1) /
    (H floor(W/2) ceil(W/2)); for even W that is 4 B (N - 1) / (W N), about 4 B / W: the
    bisection bound (H links each way, half the traffic crossing). Likewise for y-links with
    W and H swapped; the smaller of the two binds (the x one when W >= H).
    """
    n = mesh.routers
    w, h = mesh.width, mesh.height
    bounds = [link_flits]
    if w > 1:
        bounds.append(link_flits * (n - 1) / (h * (w // 2) * ((w + 1) // 2)))
    if h > 1:
        bounds.append(link_flits * (n - 1) / (w * (h // 2) * ((h + 1) // 2)))
    return min(bounds)


# --- lowering onto the packet core ----------------------------------------------------


def noc_resources(socket: Socket, packet_flits: int) -> np.ndarray:
    """The core's resource table: the mesh's link slots, then every router's injection port,
    then its ejection port. A packet holds each for all its flits, back to back."""
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
    return resource_rows(occ, lat, kind, vcs, np.where(vcs > 0, credit_ps, 0))


def noc_inputs(
    socket: Socket, packets: Traffic, inject_ps: np.ndarray, packet_flits: int, stop: int
) -> CoreInputs:
    """The core's inputs for ``packets`` injected at ``inject_ps``; the run ends once packets
    ``0 .. stop - 1`` have arrived.

    Packet p is step p (of its source router's threadblock), released at ``inject_ps[p]``,
    line operation p and message p: a read-kind message, done when it arrives, whose line
    operation delivers nothing. Step ``len(packets)`` waits for the first ``stop``.
    """
    mesh = socket.mesh
    count = len(inject_ps)
    every = np.arange(count, dtype=np.int64)
    route_start, route = core_routes(socket)
    none = np.zeros(0, dtype=np.int64)

    def per_packet(value: int) -> np.ndarray:
        return np.full(count, value, dtype=np.int64)

    return CoreInputs(
        res=noc_resources(socket, packet_flits),
        tb_cu=np.arange(mesh.routers, dtype=np.int64),
        step_tb=np.append(packets.src, 0),
        step_wait=np.append(per_packet(0), stop),
        step_compute_ps=np.zeros(count + 1, dtype=np.int64),
        timed_step=every,
        timed_at=inject_ps,
        succ_start=np.minimum(np.arange(count + 2, dtype=np.int64), stop),
        succ=np.full(stop, count, dtype=np.int64),
        lineop_start=np.append(np.arange(count + 1, dtype=np.int64), count),
        lineop_step=every,
        lineop_compute_ps=per_packet(0),
        lineop_msgs=np.stack([every, every + 1, every + 1], axis=1),
        flag_start=np.zeros(count + 2, dtype=np.int64),
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
        stop_step=count,
    )


# --- a run -----------------------------------------------------------------------------


def _check(
    socket: Socket,
    traffic: str,
    rate: float,
    packet_flits: int,
    cycles: int,
    warmup: int,
    hotspot_fraction: float,
    hotspot: int | None,
) -> None:
    if traffic not in TRAFFIC_PATTERNS:
        raise ConfigError(
            f"unknown traffic {traffic!r} (known: {', '.join(TRAFFIC_PATTERNS)})", where="traffic"
        )
    if isinstance(rate, bool) or not (0 < rate <= 1):
        raise ConfigError(
            f"the injection rate is in flits per node per cycle, in (0, 1]; got {rate}",
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
    if not 0 <= hotspot_fraction <= 1:
        raise ConfigError(
            f"the hotspot fraction is a share in [0, 1]; got {hotspot_fraction}",
            where="hotspot_fraction",
        )
    if socket.mesh.routers < 2:
        raise ConfigError("synthetic traffic needs a mesh of at least two routers")
    if hotspot is not None and not 0 <= hotspot < socket.mesh.routers:
        raise ConfigError(
            f"router {hotspot} is off the {socket.mesh.width} x {socket.mesh.height} mesh",
            where="hotspot",
        )


@dataclass(frozen=True, eq=False)
class NocRun:
    """A finished run: every packet's injection and arrival, and what the core counted.

    Packets ``first .. stop - 1`` are the measured ones (injected in the window); every packet
    before ``stop`` has arrived; later ones arrived if ``head_ps >= 0``.
    """

    socket: Socket
    traffic: str
    rate: float
    packet_flits: int
    cycles: int
    warmup: int
    seed: int
    hotspot_fraction: float
    hotspot: int
    packets: Traffic
    cycle_ps: np.ndarray  # int64 start of every cycle 0 .. horizon
    inject_ps: np.ndarray  # int64 per packet
    head_ps: np.ndarray  # int64 arrival of each packet's head, -1 if it did not arrive
    first: int
    stop: int
    events: int
    link_busy_ps: np.ndarray  # int64 per link slot, over the whole run

    @property
    def measured(self) -> slice:
        return slice(self.first, self.stop)

    @property
    def tail_ps(self) -> int:
        """Head-to-tail spacing of a packet: its other flits, back to back."""
        return (self.packet_flits - 1) * self.socket.flit_spacing_ps

    def latency_ps(self) -> np.ndarray:
        """Injection to last flit's arrival, per measured packet."""
        m = self.measured
        return self.head_ps[m] + self.tail_ps - self.inject_ps[m]

    def zero_load_ps(self) -> np.ndarray:
        """The same packets' latency in an empty network: injection port, path, ejection
        port, tail."""
        m = self.measured
        path = self.socket.router_paths.latency_ps[self.packets.src[m], self.packets.dst[m]]
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

    def result(self) -> NocResult:
        socket = self.socket
        clock = socket.noc_clock_hz
        latency = ps_to_cycles(self.latency_ps(), clock)
        zero_load = ps_to_cycles(self.zero_load_ps(), clock)
        capacity = socket.mesh.routers * self.cycles
        offered = self.packet_flits * (self.stop - self.first) / capacity
        accepted = self.flits_arrived(*self.window_ps) / capacity

        end = self.warmup + self.cycles
        quarter = max(self.cycles // 4, 1)
        injected = self.packets.cycle[self.measured]
        queueing = latency - zero_load
        early = queueing[injected < self.warmup + quarter]
        late = queueing[injected >= end - quarter]
        growth = float(late.mean() - early.mean()) if len(early) and len(late) else 0.0
        mean_zero_load = float(zero_load.mean())
        saturated = (
            accepted < SATURATION_ACCEPTED_SHARE * offered
            or growth > SATURATION_GROWTH_SHARE * mean_zero_load
        )
        return NocResult(
            traffic=self.traffic,
            rate=float(self.rate),
            packet_flits=int(self.packet_flits),
            routers=socket.mesh.routers,
            cycles=int(self.cycles),
            warmup=int(self.warmup),
            seed=int(self.seed),
            offered_flits_per_node_cycle=offered,
            accepted_flits_per_node_cycle=accepted,
            avg_latency_cycles=float(latency.mean()),
            p99_latency_cycles=float(np.percentile(latency, 99)),
            max_latency_cycles=float(latency.max()),
            zero_load_latency_cycles=mean_zero_load,
            latency_growth_cycles=growth,
            packets=self.stop - self.first,
            saturated=bool(saturated),
            channel_bound_flits_per_node_cycle=channel_bound(
                socket, self.traffic, self.hotspot_fraction, self.hotspot
            ),
            link_flits_per_cycle=link_flits_per_cycle(socket),
            events=self.events,
        )


def run_noc(
    socket: Socket,
    traffic: str = "uniform",
    rate: float = 0.1,
    packet_flits: int = 1,
    cycles: int = 10_000,
    warmup: int = 1_000,
    seed: int = 0,
    hotspot_fraction: float = 0.2,
    hotspot: int | None = None,
) -> NocRun:
    """Run synthetic traffic on ``socket``'s mesh (see the module docstring)."""
    _check(socket, traffic, rate, packet_flits, cycles, warmup, hotspot_fraction, hotspot)
    mesh = socket.mesh
    clock = socket.noc_clock_hz
    hot = centre(mesh) if hotspot is None else hotspot
    end = warmup + cycles
    horizon = end + cycles
    packets = generate_traffic(
        socket, traffic, rate, packet_flits, horizon, seed, hotspot_fraction, hot
    )
    cycle_ps = np.array([cycles_to_ps(c, clock) for c in range(horizon + 1)], dtype=np.int64)
    inject_ps = cycle_ps[packets.cycle]
    first = int(np.searchsorted(packets.cycle, warmup))
    stop = int(np.searchsorted(packets.cycle, end))
    if stop == first:
        raise ConfigError(
            f"no packet was injected in the {cycles}-cycle window at rate {rate}; "
            "raise the rate or the number of cycles"
        )
    done = run_core(noc_inputs(socket, packets, inject_ps, packet_flits, stop))
    head_ps = done.outputs.msg_done
    if (head_ps[:stop] < 0).any():
        raise RuntimeError("the NoC run stopped before every measured packet arrived")
    return NocRun(
        socket=socket,
        traffic=traffic,
        rate=float(rate),
        packet_flits=int(packet_flits),
        cycles=int(cycles),
        warmup=int(warmup),
        seed=int(seed),
        hotspot_fraction=float(hotspot_fraction),
        hotspot=hot,
        packets=packets,
        cycle_ps=cycle_ps,
        inject_ps=inject_ps,
        head_ps=head_ps,
        first=first,
        stop=stop,
        events=done.events,
        link_busy_ps=done.res_busy[: mesh.link_slots],
    )
