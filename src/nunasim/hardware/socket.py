"""The floorplan of one GPU socket: mesh, dies, compute units, HBM stacks and I/O ports.

A ``Socket`` is frozen data. Its constructor checks everything that can be wrong with a
floorplan and raises ``ConfigError`` naming the element by the key path that a preset file
uses for it (``hbm.stacks[3]``), so a file loader only has to add the file name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from nunasim.errors import ConfigError
from nunasim.hardware.keyed_repr import repr_without
from nunasim.hardware.mesh import ROUTING_ORDERS, Mesh
from nunasim.units import cycles_to_ps, transfer_ps

PORT_HASHES = ("xor-fold", "rotation")
DIE_KINDS = ("compute", "io")
PAGE_INTERLEAVES = ("listed", "die-first")
FLOW_CONTROLS = ("none", "credit")


@dataclass(frozen=True, repr=False)
class Die:
    """A rectangle of routers, bounds inclusive. A ``compute`` die holds the compute units
    (and whatever else the preset attaches to its routers); an ``io`` die holds none, only
    I/O ports and its share of the NoC: Table 2's "2 x I/O" dies."""

    x0: int
    y0: int
    x1: int
    y1: int
    kind: str = "compute"

    def __repr__(self) -> str:
        return repr_without(self, {"kind": "compute"})

    def covers(self, x: int, y: int) -> bool:
        return self.x0 <= x <= self.x1 and self.y0 <= y <= self.y1

    @property
    def width(self) -> int:
        return self.x1 - self.x0 + 1

    @property
    def height(self) -> int:
        return self.y1 - self.y0 + 1


@dataclass(frozen=True)
class Stack:
    """An HBM stack attached to a router of the mesh."""

    router: int
    bandwidth: float  # bytes/s, reads and writes together
    latency_ps: int  # access latency


@dataclass(frozen=True)
class Port:
    """An I/O port of the scale-up network. Its index in ``Socket.ports`` is its spatial
    number, which is also its ordinal: the switch plane it joins."""

    router: int


@dataclass(frozen=True)
class Router:
    """The routers' microarchitecture, when a preset describes it (``noc.router``).

    A hop's ``cycles_per_hop`` splits into the pipeline of the router a flit leaves and the
    link it crosses; the endpoints add the injection channel, the last router's pipeline and
    the ejection channel. Channel bandwidths of ``None`` are the mesh link's.
    """

    pipeline_stages: int  # cycles a flit spends in one router
    link_latency_cycles: int  # cycles on the wire between two routers
    buffer_flits: int  # input buffer per virtual channel
    virtual_channels: int
    injection_latency_cycles: int
    ejection_latency_cycles: int
    injection_bandwidth: float | None = None  # bytes/s
    ejection_bandwidth: float | None = None
    flow_control: str = "none"  # "none": infinite buffers; "credit": back-pressure
    # A VC takes a new packet only once the last one's tail credit is back (one packet per
    # VC at a time), not as soon as its tail has left: BookSim's option of the same name.
    wait_for_tail_credit: bool = False
    # Stages of the pipeline a packet's head passes and its other flits skip (route
    # computation and VC allocation); None: all but the last two (switch allocation and
    # traversal), which every flit passes.
    head_stages: int | None = None

    @property
    def head_stage_count(self) -> int:
        if self.head_stages is not None:
            return self.head_stages
        return max(self.pipeline_stages - 2, 0)


@dataclass(frozen=True, eq=False)
class RouterPaths:
    """The dimension-order path of every ordered pair of routers, flattened (pair
    ``src * routers + dst``), with its hop count and its zero-load latency."""

    start: np.ndarray  # CSR over pairs into ``links``
    links: np.ndarray  # directed link ids
    hops: np.ndarray  # [src, dst] links on the path
    latency_ps: np.ndarray  # [src, dst] zero-load latency, die crossings included

    def path(self, src: int, dst: int) -> np.ndarray:
        """The links from router ``src`` to router ``dst``."""
        pair = src * len(self.hops) + dst
        return self.links[self.start[pair] : self.start[pair + 1]]


# Socket fields added after results were first cached, with the value that changes nothing.
_SOCKET_NEUTRAL: dict[str, object] = {"io_crossing_cycles": None, "io_link_bandwidth": None}


@dataclass(frozen=True, repr=False)
class Socket:
    mesh: Mesh
    dies: tuple[Die, ...]
    cu_routers: tuple[int, ...]  # routers that host compute units, in CU numbering order
    cus_per_router: int
    l1_latency_ps: int  # CU to NoC
    outstanding_requests: int  # per CU
    flops: tuple[tuple[str, float], ...]  # (data type, FLOP/s for the whole socket)
    noc_clock_hz: float
    cycles_per_hop: int  # router + link
    die_crossing_cycles: int  # extra cycles on a link between two dies
    link_bandwidth: float  # bytes/s per direction
    routing: str  # dimension order: "xy" or "yx"
    line_bytes: int  # flit and cache-line size
    page_bytes: int
    stacks: tuple[Stack, ...]
    ports: tuple[Port, ...]  # in spatial order
    declared_granularities: tuple[int, ...] | None = field(default=None)
    # Threadblocks one CU can hold at once (its thread and register budget over a
    # communication threadblock's); None: no limit.
    threadblocks_per_cu: int | None = field(default=None)
    # How the baseline maps a line address to one of a group's ports: "xor-fold" (a static
    # XOR fold of the address bits, as boot-time fabric managers program it) or "rotation"
    # (a perfectly balanced rotation, an idealised hash).
    port_hash: str = field(default="xor-fold")
    # The order in which the baseline's round-robin hands pages to stacks: "listed" (the
    # preset's stack order) or "die-first" (one stack of each die in turn, like the
    # threadblock dispatcher's round-robin over dies).
    page_interleave: str = field(default="listed")
    # None: routers are folded into ``cycles_per_hop`` and the endpoints cost nothing.
    router: Router | None = field(default=None)
    # Extra cycles on a link to or from an I/O die (None: ``die_crossing_cycles``, as any
    # other die-to-die link), and such a link's bandwidth per direction (None: the mesh
    # link's).
    io_crossing_cycles: int | None = field(default=None)
    io_link_bandwidth: float | None = field(default=None)

    def __post_init__(self) -> None:
        _validate(self)

    def __repr__(self) -> str:
        return repr_without(self, _SOCKET_NEUTRAL)

    # --- counts and simple lookups ------------------------------------------------------

    @property
    def cus(self) -> int:
        return len(self.cu_routers) * self.cus_per_router

    def cu_router(self, cu: int) -> int:
        if not 0 <= cu < self.cus:
            raise ValueError(f"CU {cu} does not exist (the socket has {self.cus})")
        return self.cu_routers[cu // self.cus_per_router]

    @cached_property
    def router_of_cu(self) -> np.ndarray:
        """The router of every CU, by CU number."""
        return _shared(np.repeat(np.array(self.cu_routers, dtype=np.int64), self.cus_per_router))

    @cached_property
    def port_routers(self) -> np.ndarray:
        """The router of every port, by port number."""
        return _shared(np.array([p.router for p in self.ports], dtype=np.int64))

    @cached_property
    def stack_routers(self) -> np.ndarray:
        """The router of every stack, by stack number."""
        return _shared(np.array([s.router for s in self.stacks], dtype=np.int64))

    @cached_property
    def die_of_router(self) -> tuple[int, ...]:
        owner = [-1] * self.mesh.routers
        for index, die in enumerate(self.dies):
            for y in range(die.y0, die.y1 + 1):
                for x in range(die.x0, die.x1 + 1):
                    owner[self.mesh.router(x, y)] = index
        return tuple(owner)

    @cached_property
    def interleave_order(self) -> tuple[int, ...]:
        """Stack numbers in the order the baseline's page round-robin visits them."""
        if self.page_interleave == "listed":
            return tuple(range(len(self.stacks)))
        per_die: dict[int, list[int]] = {}
        for index, stack in enumerate(self.stacks):
            per_die.setdefault(self.die_of_router[stack.router], []).append(index)
        queues = [per_die[d] for d in sorted(per_die)]
        order: list[int] = []
        for k in range(max(len(q) for q in queues)):
            order.extend(q[k] for q in queues if k < len(q))
        return tuple(order)

    def flops_for(self, dtype: str) -> float:
        for name, rate in self.flops:
            if name == dtype:
                return rate
        known = ", ".join(name for name, _ in self.flops)
        raise ConfigError(f"no compute rate for data type {dtype!r} (known: {known})")

    # --- latency and distance ------------------------------------------------------------

    @cached_property
    def hop_ps(self) -> int:
        """Zero-load time of one hop (router + link) inside a die."""
        return cycles_to_ps(self.cycles_per_hop, self.noc_clock_hz)

    @cached_property
    def crossing_hop_ps(self) -> int:
        """Zero-load time of one hop on a link between two dies."""
        return cycles_to_ps(self.cycles_per_hop + self.die_crossing_cycles, self.noc_clock_hz)

    @cached_property
    def link_flit_ps(self) -> int:
        """Serialisation of one line (flit) on a mesh link."""
        return transfer_ps(self.line_bytes, self.link_bandwidth)

    @cached_property
    def injection_flit_ps(self) -> int:
        """Serialisation of one flit on a router's injection channel."""
        bandwidth = self.router and self.router.injection_bandwidth
        return transfer_ps(self.line_bytes, bandwidth or self.link_bandwidth)

    @cached_property
    def ejection_flit_ps(self) -> int:
        """Serialisation of one flit on a router's ejection channel."""
        bandwidth = self.router and self.router.ejection_bandwidth
        return transfer_ps(self.line_bytes, bandwidth or self.link_bandwidth)

    @cached_property
    def injection_latency_ps(self) -> int:
        """From the start of injection to the first router's pipeline (which the first
        link's hop latency holds)."""
        if self.router is None:
            return 0
        return cycles_to_ps(self.router.injection_latency_cycles, self.noc_clock_hz)

    @cached_property
    def ejection_latency_ps(self) -> int:
        """From the last link's arrival to a flit received in full: the last router's
        pipeline, the ejection channel's latency and one flit time on it (the sink counts a
        flit once all of it is in)."""
        r = self.router
        if r is None:
            return 0
        cycles = r.pipeline_stages + r.ejection_latency_cycles
        return cycles_to_ps(cycles, self.noc_clock_hz) + self.ejection_flit_ps

    @cached_property
    def credit_vcs(self) -> int:
        """Virtual channels of an input buffer under credit flow control; 0 without it."""
        r = self.router
        return r.virtual_channels if r is not None and r.flow_control == "credit" else 0

    @cached_property
    def tail_credit(self) -> bool:
        """Whether a VC waits for its packet's tail credit before it takes the next one."""
        return self.credit_vcs > 0 and bool(self.router.wait_for_tail_credit)

    @cached_property
    def head_ps(self) -> int:
        """Under credit flow control, the time a packet's head spends in the stages of a
        router its other flits skip (``Router.head_stage_count``), 0 without."""
        if not self.credit_vcs:
            return 0
        return cycles_to_ps(self.router.head_stage_count, self.noc_clock_hz)

    @cached_property
    def link_credit_ps(self) -> int:
        """A credit's way back over a link: the link's latency."""
        r = self.router
        return 0 if r is None else cycles_to_ps(r.link_latency_cycles, self.noc_clock_hz)

    @property
    def endpoint_latency_ps(self) -> int:
        return self.injection_latency_ps + self.ejection_latency_ps

    @cached_property
    def flit_spacing_ps(self) -> int:
        """Time between two flits of one packet at its destination: the slowest channel's
        flit time."""
        return max(self.link_flit_ps, self.injection_flit_ps, self.ejection_flit_ps)

    def crosses_dies(self, link: int) -> bool:
        src, dst = self.mesh.link_ends(link)
        return self.die_of_router[src] != self.die_of_router[dst]

    def reaches_io_die(self, link: int) -> bool:
        """Whether ``link`` joins an I/O die to another die."""
        if not self.crosses_dies(link):
            return False
        return any(self.dies[self.die_of_router[r]].kind == "io" for r in self.mesh.link_ends(link))

    @cached_property
    def io_hop_ps(self) -> int:
        """Zero-load time of one hop on a link to or from an I/O die."""
        extra = self.io_crossing_cycles
        if extra is None:
            return self.crossing_hop_ps
        return cycles_to_ps(self.cycles_per_hop + extra, self.noc_clock_hz)

    def link_latency_ps(self, link: int) -> int:
        if self.reaches_io_die(link):
            return self.io_hop_ps
        return self.crossing_hop_ps if self.crosses_dies(link) else self.hop_ps

    @cached_property
    def io_link_flit_ps(self) -> int:
        """Serialisation of one line on a link to or from an I/O die."""
        return transfer_ps(self.line_bytes, self.io_link_bandwidth or self.link_bandwidth)

    @cached_property
    def link_flits_ps(self) -> np.ndarray:
        """The serialisation of one line on every link slot (slots off the mesh, which no
        route uses, the mesh link's)."""
        flit = np.full(self.mesh.link_slots, self.link_flit_ps, dtype=np.int64)
        for link in self.mesh.links():
            if self.reaches_io_die(link):
                flit[link] = self.io_link_flit_ps
        return _shared(flit)

    @cached_property
    def link_latencies_ps(self) -> np.ndarray:
        """``link_latency_ps`` of every link slot (0 for slots off the mesh)."""
        latency = np.zeros(self.mesh.link_slots, dtype=np.int64)
        for link in self.mesh.links():
            latency[link] = self.link_latency_ps(link)
        return _shared(latency)

    @cached_property
    def router_paths(self) -> RouterPaths:
        """Paths, hops and zero-load latencies between every two routers: the one distance
        table that placement, estimates and lowering all read."""
        n = self.mesh.routers
        src, dst = np.divmod(np.arange(n * n, dtype=np.int64), n)
        start, links = self.mesh.paths(src, dst, self.routing)
        elapsed = np.concatenate([[0], np.cumsum(self.link_latencies_ps[links])])
        latency = elapsed[start[1:]] - elapsed[start[:-1]]
        hops = np.diff(start).reshape(n, n)
        return RouterPaths(*(_shared(a) for a in (start, links, hops, latency.reshape(n, n))))

    def path(self, src: int, dst: int) -> list[int]:
        """Directed links of the route from router ``src`` to router ``dst``."""
        self.mesh.check(src, dst)
        return self.router_paths.path(src, dst).tolist()

    def hops(self, src: int, dst: int) -> int:
        """Links on the route from router ``src`` to router ``dst``."""
        self.mesh.check(src, dst)
        return int(self.router_paths.hops[src, dst])

    def path_latency_ps(self, src: int, dst: int) -> int:
        """Zero-load NoC latency between two routers (no serialisation)."""
        self.mesh.check(src, dst)
        return int(self.router_paths.latency_ps[src, dst])

    def _by_distance(self, router: int, targets: list[int]) -> tuple[int, ...]:
        def key(index: int) -> tuple[int, int, int]:
            target = targets[index]
            return (self.path_latency_ps(router, target), self.hops(router, target), index)

        return tuple(sorted(range(len(targets)), key=key))

    def stacks_by_distance(self, router: int) -> tuple[int, ...]:
        """Stack indices, nearest to ``router`` first (zero-load latency, then index)."""
        return self._by_distance(router, [s.router for s in self.stacks])

    def ports_by_distance(self, router: int) -> tuple[int, ...]:
        """Port numbers, nearest to ``router`` first (zero-load latency, then number)."""
        return self._by_distance(router, [p.router for p in self.ports])

    # --- NAR domains ---------------------------------------------------------------------

    def domain_ports(self, granularity: int, domain: int) -> range:
        """Port numbers of NAR domain ``domain`` when the ports are split ``granularity`` ways.

        Domains are contiguous ranges of spatial port numbers, domain 0 first.
        """
        if granularity not in self.valid_granularities:
            raise ConfigError(
                f"NAR granularity {granularity} is not valid on this socket "
                f"(valid: {', '.join(map(str, self.valid_granularities))})"
            )
        if not 0 <= domain < granularity:
            raise ValueError(f"domain {domain} does not exist at granularity {granularity}")
        size = len(self.ports) // granularity
        return range(domain * size, (domain + 1) * size)

    def port_domain(self, granularity: int, port: int) -> int:
        self.domain_ports(granularity, 0)  # validates the granularity
        return port // (len(self.ports) // granularity)

    def splits_contiguously(self, granularity: int) -> bool:
        """Whether ``granularity`` equal runs of port numbers each sit on one connected
        region of routers. One domain (all ports) is the baseline and always valid."""
        count = len(self.ports)
        if granularity < 1 or count % granularity:
            return False
        if granularity == 1:
            return True
        size = count // granularity
        return all(
            self.mesh.connected({p.router for p in self.ports[start : start + size]})
            for start in range(0, count, size)
        )

    @cached_property
    def valid_granularities(self) -> tuple[int, ...]:
        """Granularities NAR may use: the preset's list, or every one that splits
        contiguously when the preset gives none."""
        if self.declared_granularities is not None:
            return self.declared_granularities
        return tuple(g for g in range(1, len(self.ports) + 1) if self.splits_contiguously(g))


def _shared(array: np.ndarray) -> np.ndarray:
    """``array`` made read-only: a socket's cached tables are shared by every caller."""
    array.flags.writeable = False
    return array


def _fail(where: str, reason: str) -> None:
    raise ConfigError(reason, where=where)


def _validate(s: Socket) -> None:
    mesh = s.mesh
    if mesh.width < 1 or mesh.height < 1:
        _fail("mesh", f"a mesh needs at least one router; got {mesh.width} x {mesh.height}")

    owner: dict[tuple[int, int], int] = {}
    for i, die in enumerate(s.dies):
        where = f"dies[{i}]"
        if die.x0 > die.x1 or die.y0 > die.y1:
            _fail(where, "a die's ranges run from low to high, e.g. x: [0, 5]")
        if not (mesh.contains(die.x0, die.y0) and mesh.contains(die.x1, die.y1)):
            _fail(
                where,
                f"die x {die.x0}..{die.x1}, y {die.y0}..{die.y1} leaves the "
                f"{mesh.width} x {mesh.height} mesh",
            )
        for y in range(die.y0, die.y1 + 1):
            for x in range(die.x0, die.x1 + 1):
                if (x, y) in owner:
                    _fail(where, f"router ({x}, {y}) is already in dies[{owner[(x, y)]}]")
                owner[(x, y)] = i
        if die.kind not in DIE_KINDS:
            _fail(f"{where}.kind", f"unknown die kind {die.kind!r} (known: {', '.join(DIE_KINDS)})")
    if not s.dies:
        _fail("dies", "a socket needs at least one die")
    missing = [(x, y) for y in range(mesh.height) for x in range(mesh.width) if (x, y) not in owner]
    if missing:
        _fail("dies", f"{len(missing)} routers belong to no die, the first at {missing[0]}")

    if not s.cu_routers:
        _fail("compute.routers", "a socket needs at least one router with compute units")
    if len(set(s.cu_routers)) != len(s.cu_routers):
        _fail("compute.routers", "a router is listed twice")
    for i, router in enumerate(s.cu_routers):
        if not 0 <= router < mesh.routers:
            _fail(f"compute.routers[{i}]", "router is off the mesh")
        die = owner.get((router % mesh.width, router // mesh.width))
        if die is not None and s.dies[die].kind == "io":
            x, y = router % mesh.width, router // mesh.width
            _fail(f"compute.routers[{i}]", f"router ({x}, {y}) is on an I/O die (dies[{die}])")
    _positive(s.cus_per_router, "compute.cus_per_router")
    _positive(s.outstanding_requests, "compute.outstanding_requests")
    _non_negative(s.l1_latency_ps, "compute.l1_latency")
    if s.threadblocks_per_cu is not None:
        _positive(s.threadblocks_per_cu, "compute.threadblocks_per_cu")
    if not s.flops:
        _fail("compute.flops", "give at least one compute rate, e.g. bf16: 25PFLOPS")
    for name, rate in s.flops:
        _positive(rate, f"compute.flops.{name}")

    _positive(s.noc_clock_hz, "noc.clock")
    _positive(s.cycles_per_hop, "noc.cycles_per_hop")
    _non_negative(s.die_crossing_cycles, "noc.die_crossing_cycles")
    _positive(s.link_bandwidth, "noc.link_bandwidth")
    if s.io_crossing_cycles is not None:
        _non_negative(s.io_crossing_cycles, "noc.io_crossing_cycles")
    if s.io_link_bandwidth is not None:
        _positive(s.io_link_bandwidth, "noc.io_link_bandwidth")
    has_io_die = any(d.kind == "io" for d in s.dies)
    for key, value in (
        ("io_crossing_cycles", s.io_crossing_cycles),
        ("io_link_bandwidth", s.io_link_bandwidth),
    ):
        if value is not None and not has_io_die:
            _fail(f"noc.{key}", "the socket has no I/O die (a die of kind: io) for it to apply to")
    if s.routing not in ROUTING_ORDERS:
        _fail("noc.routing", f"unknown routing {s.routing!r} (known: {', '.join(ROUTING_ORDERS)})")

    _positive(s.line_bytes, "memory.line")
    _positive(s.page_bytes, "memory.page")
    if s.page_bytes % s.line_bytes:
        _fail("memory.page", f"a page ({s.page_bytes} B) must hold whole lines ({s.line_bytes} B)")

    if not s.stacks:
        _fail("hbm.stacks", "a socket needs at least one HBM stack")
    for i, stack in enumerate(s.stacks):
        if not 0 <= stack.router < mesh.routers:
            _fail(f"hbm.stacks[{i}]", "stack is attached to a router off the mesh")
        _positive(stack.bandwidth, f"hbm.stacks[{i}].bandwidth")
        _non_negative(stack.latency_ps, f"hbm.stacks[{i}].latency")

    if not s.ports:
        _fail("ports", "a socket needs at least one I/O port")
    for i, port in enumerate(s.ports):
        if not 0 <= port.router < mesh.routers:
            _fail(f"ports[{i}]", "port is attached to a router off the mesh")

    if s.port_hash not in PORT_HASHES:
        _fail("port_hash", f"unknown port hash {s.port_hash!r} (known: {', '.join(PORT_HASHES)})")

    if s.page_interleave not in PAGE_INTERLEAVES:
        known = ", ".join(PAGE_INTERLEAVES)
        _fail(
            "memory.interleave", f"unknown page interleave {s.page_interleave!r} (known: {known})"
        )

    if s.router is not None:
        _validate_router(s.router, s.cycles_per_hop)

    if s.declared_granularities is not None:
        if not s.declared_granularities:
            _fail("nar.granularities", "list at least one granularity (1 is the baseline)")
        for i, g in enumerate(s.declared_granularities):
            if not s.splits_contiguously(g):
                reason = (
                    f"{g} does not divide the {len(s.ports)} ports"
                    if g < 1 or len(s.ports) % g
                    else f"splitting the {len(s.ports)} ports {g} ways leaves a domain whose "
                    "ports are not on one connected group of routers"
                )
                _fail(f"nar.granularities[{i}]", reason)


def _validate_router(r: Router, cycles_per_hop: int) -> None:
    where = "noc.router"
    _positive(r.pipeline_stages, f"{where}.pipeline_stages")
    _non_negative(r.link_latency_cycles, f"{where}.link_latency")
    if r.pipeline_stages + r.link_latency_cycles != cycles_per_hop:
        _fail(
            f"{where}.link_latency",
            f"pipeline_stages + link_latency ({r.pipeline_stages} + {r.link_latency_cycles}) "
            f"must equal noc.cycles_per_hop ({cycles_per_hop})",
        )
    _positive(r.buffer_flits, f"{where}.buffer_flits")
    if r.head_stages is not None and not 0 <= r.head_stages <= r.pipeline_stages:
        _fail(
            f"{where}.head_stages",
            f"must be between 0 and pipeline_stages ({r.pipeline_stages}); got {r.head_stages}",
        )
    _positive(r.virtual_channels, f"{where}.virtual_channels")
    _non_negative(r.injection_latency_cycles, f"{where}.injection_latency")
    _non_negative(r.ejection_latency_cycles, f"{where}.ejection_latency")
    for key, bandwidth in (
        ("injection_width", r.injection_bandwidth),
        ("ejection_width", r.ejection_bandwidth),
    ):
        if bandwidth is not None:
            _positive(bandwidth, f"{where}.{key}")
    if r.flow_control not in FLOW_CONTROLS:
        known = ", ".join(FLOW_CONTROLS)
        _fail(f"{where}.flow_control", f"unknown flow control {r.flow_control!r} (known: {known})")


def _positive(value: float, where: str) -> None:
    if not value > 0:
        _fail(where, f"must be positive; got {value}")


def _non_negative(value: float, where: str) -> None:
    if not value >= 0:
        _fail(where, f"must not be negative; got {value}")
