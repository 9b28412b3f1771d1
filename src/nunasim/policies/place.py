"""The paper's eight configurations (section 5.3 and Fig. 11) and the placement policies
behind them.

- **UA** threadblocks: round-robin over the dies in threadblock order, each on the first CU
  with the fewest threadblocks in the die's dispatch order: a seeded random order of the
  die's routers, one CU per router per pass (threadblocks spread over the die).
- **UA** pages: every page of a GPU, in buffer order (input, output, scratch), round-robin
  over the stacks in the socket's interleave order (by default the order the preset lists
  them; ``die-first`` takes one stack of each die in turn). With NAR a page takes the NAR domain its
  stack backs (round-robin over the domains when the stack backs several).
- **NUMA** threadblocks: in logical-group order, each on the first CU with budget and room in
  order of line-weighted distance to the stacks holding its local chunks (UA pages):
  Algorithm 1's scheduling near the data, as the paper's NUMA proxy runs it.
- **NAP**: Algorithm 1. Logical groups go round-robin to NAR domains; each threadblock to the
  first CU with budget and room (``budget.py``) in order of distance to its domain's ports;
  each of its local chunks to the stack nearest that CU, each remote chunk to the stack
  nearest the domain's ports on the owning GPU, and its flag page to the stack nearest its
  CU, each with budget in the earliest wave (``budget.py``), so a domain's data spreads
  over the stacks that back it instead of piling onto the nearest one. With NAR the stacks
  are those backing the domain and the pages go to the domain's segment; without it any
  stack, baseline segment. The first chunk to touch a page fixes it (first come, first
  served, in processing order).
- **NAP\\***: NAP's threadblocks, UA's pages (with NAR, each page in the domain its stack
  backs, as for UA+NAR).

Pages that no policy decision reaches (a buffer no threadblock touches) get UA pages.
Distances are zero-load NoC latencies (``Socket.router_paths``), so a die crossing costs
what it costs the traffic.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from nunasim.collectives.access import access_sets
from nunasim.collectives.plan import Buffer, Plan
from nunasim.errors import ConfigError
from nunasim.hardware import Pod, Socket
from nunasim.mapping.address import AddressMap
from nunasim.mapping.buffer_layout import LAYOUTS, BufferLayout
from nunasim.mapping.domains import domain_layout
from nunasim.mapping.placement import BUFFERS, BufferPages, Configuration, GpuPlacement, Placement
from nunasim.policies.budget import cu_budget, stack_budget, tb_demand
from nunasim.policies.dispatch import ua_cus
from nunasim.policies.estimate import estimate_ps
from nunasim.policies.logical import GROUPINGS, logical_allocation

CONFIGURATIONS: dict[str, Configuration] = {
    c.name: c
    for c in (
        Configuration("UA", "UA", "UA", False),
        Configuration("UA+NAR", "UA", "UA", True),
        Configuration("NUMA", "NUMA", "UA", False),
        Configuration("NUMA+NAR", "NUMA", "UA", True),
        Configuration("NAP", "NAP", "NAP", False),
        Configuration("NAP+NAR", "NAP", "NAP", True),
        Configuration("NAP*", "NAP", "UA", False),
        Configuration("NAP*+NAR", "NAP", "UA", True),
    )
}


def configuration(name: str) -> Configuration:
    try:
        return CONFIGURATIONS[name]
    except KeyError:
        known = ", ".join(CONFIGURATIONS)
        raise ConfigError(f"unknown configuration {name!r} (known: {known})") from None


def uses_domains(config: Configuration) -> bool:
    return config.nar or config.threadblocks == "NAP"


class _Pages:
    """Per GPU and buffer: each page's (region, stack), decided first come first served."""

    def __init__(self, plan: Plan, layout: BufferLayout) -> None:
        self.layout = layout
        self.region: list[dict[Buffer, np.ndarray]] = [
            {b: np.full(layout.pages(p.buffer_chunks(b)), -1, dtype=np.int64) for b in BUFFERS}
            for p in plan.gpus
        ]
        self.padding = sum(layout.padding(p.buffer_chunks(b)) for p in plan.gpus for b in BUFFERS)

    def open_pages(self, gpu: int, buffer: Buffer, chunk: int) -> list[int]:
        pages = self.layout.chunk_pages(chunk)
        regions = self.region[gpu][buffer]
        return [p for p in pages if regions[p] < 0]

    def set(self, gpu: int, buffer: Buffer, pages: list[int], region: int) -> None:
        self.region[gpu][buffer][pages] = region


def _ua_pages(pages: _Pages, amap: AddressMap, nar_granularity: int | None) -> None:
    """Fill every undecided page: round-robin over stacks in page order per GPU."""
    order = amap.socket.interleave_order
    stacks = len(order)
    segment = amap.segment(nar_granularity)
    layout = amap.layout(nar_granularity) if nar_granularity else None
    for per_gpu in pages.region:
        counter = 0
        for buffer in BUFFERS:
            regions = per_gpu[buffer]
            for page in range(len(regions)):
                stack = order[counter % stacks]
                if regions[page] < 0:
                    if layout is None:
                        regions[page] = amap.region(0, -1, stack)
                    else:
                        backs = layout.stack_domains[stack]
                        domain = backs[(counter // stacks) % len(backs)]
                        regions[page] = amap.region(segment, domain, stack)
                counter += 1


def _ua_threadblocks(plan: Plan, socket: Socket, seed: int) -> list[np.ndarray]:
    """UA dispatch on every GPU; the dies' dispatch orders come from ``seed`` and are the
    same on every GPU (identical sockets, identical dispatchers)."""
    return [ua_cus(socket, len(p.threadblocks), np.random.default_rng(seed)) for p in plan.gpus]


def _order_by(values: np.ndarray) -> np.ndarray:
    """Indices by increasing value, the lower index first among equals."""
    return np.lexsort((np.arange(len(values)), values))


class _Placer:
    def __init__(
        self,
        plan: Plan,
        size: int,
        pod: Pod,
        config: Configuration,
        granularity: int,
        seed: int,
        grouping: str,
        layout: str,
    ) -> None:
        self.plan, self.pod, self.config, self.seed = plan, pod, config, seed
        self.grouping = grouping
        self.socket = socket = pod.socket
        self.granularity = granularity
        self.nar = config.nar and granularity > 1
        self.amap = AddressMap(socket, (granularity,) if self.nar else ())
        self.chunk_bytes = plan.chunk_bytes(size)
        self.size = size
        self.lines_per_chunk = -(-self.chunk_bytes // socket.line_bytes)
        self.pages = _Pages(
            plan, BufferLayout(self.chunk_bytes, socket.line_bytes, socket.page_bytes, layout)
        )
        self.cus = [cu_budget(socket) for _ in plan.gpus]
        self.stacks = [stack_budget(socket) for _ in plan.gpus]
        self.latency = socket.router_paths.latency_ps
        self.cu_routers = socket.router_of_cu
        self.stack_routers = socket.stack_routers
        self.tb_cu = [np.full(len(p.threadblocks), -1, dtype=np.int64) for p in plan.gpus]
        self.tb_domain = [np.full(len(p.threadblocks), -1, dtype=np.int64) for p in plan.gpus]

    # --- NAP --------------------------------------------------------------------------

    def nap(self, place_pages: bool) -> None:
        socket, plan = self.socket, self.plan
        layout = domain_layout(socket, self.granularity)
        segment = self.amap.segment(self.granularity if self.nar else None)
        sets = access_sets(plan)
        cu_orders = [layout.cus_by_distance(socket, d) for d in range(self.granularity)]
        all_stacks = np.arange(len(socket.stacks))
        nar = 0
        for group in logical_allocation(sets, self.grouping):
            nar = (nar + 1) % self.granularity  # Algorithm 1, line 12: round-robin domains
            for gpu, tb in group.members:
                demand = tb_demand(plan, gpu, tb, self.lines_per_chunk, socket.outstanding_requests)
                cu = self.cus[gpu].choose(cu_orders[nar], demand)
                self.tb_cu[gpu][tb] = cu
                self.tb_domain[gpu][tb] = nar
                if not place_pages:
                    continue
                allowed = np.array(layout.stacks[nar]) if self.nar else all_stacks
                near_cu = allowed[
                    _order_by(self.latency[self.cu_routers[cu], self.stack_routers[allowed]])
                ]
                near_ports = allowed[
                    _order_by(layout.router_distance[nar][self.stack_routers[allowed]])
                ]
                for chunk_id, buffer, owner in sorted(sets[(gpu, tb)].chunks):
                    buffer = Buffer(buffer)
                    open_pages = self.pages.open_pages(owner, buffer, chunk_id)
                    if not open_pages:
                        continue
                    order = near_cu if owner == gpu else near_ports
                    stack = self.stacks[owner].fill(order, self.lines_per_chunk)
                    region = self.amap.region(segment, nar if self.nar else -1, stack)
                    self.pages.set(owner, buffer, open_pages, region)

    # --- NUMA -------------------------------------------------------------------------

    def numa(self) -> None:
        """Threadblocks near the memory they access (Algorithm 1's scheduling with baseline
        pages, as the paper's NUMA proxy runs it); pages must already be placed."""
        socket, plan = self.socket, self.plan
        sets = access_sets(plan)
        provisional = self.result(fallback=False)
        router_cost_base = self.latency[:, self.stack_routers]  # [router, stack]
        for group in logical_allocation(sets, self.grouping):
            for gpu, tb in group.members:
                weight = np.zeros(len(socket.stacks))
                access = sets[(gpu, tb)]
                for chunk_id, buffer, owner in access.local_reads | access.local_writes:
                    stacks = provisional.chunk_stacks(owner, Buffer(buffer), chunk_id)
                    weight += np.bincount(stacks, minlength=len(socket.stacks))
                cost = (router_cost_base @ weight)[self.cu_routers]
                demand = tb_demand(plan, gpu, tb, self.lines_per_chunk, socket.outstanding_requests)
                self.tb_cu[gpu][tb] = self.cus[gpu].choose(_order_by(cost), demand)

    # --- result -----------------------------------------------------------------------

    def flag_regions(self, gpu: int) -> np.ndarray:
        """The region of each threadblock's flag page (the flags peers write for it).

        With NAP pages a flag sits on the stack nearest its threadblock's CU (among the
        stacks backing its domain under NAR); otherwise flag pages go round-robin over the
        stacks like UA's pages, in threadblock order."""
        socket, amap = self.socket, self.amap
        segment = amap.segment(self.granularity if self.nar else None)
        layout = amap.layout(self.granularity) if self.nar else None
        stacks = len(socket.stacks)
        regions = np.empty(len(self.tb_cu[gpu]), dtype=np.int64)
        for tb, cu in enumerate(self.tb_cu[gpu]):
            domain = int(self.tb_domain[gpu][tb])
            if self.config.pages == "NAP":
                allowed = np.array(layout.stacks[domain]) if layout else np.arange(stacks)
                latency = self.latency[self.cu_routers[cu], self.stack_routers[allowed]]
                stack = self.stacks[gpu].fill(allowed[_order_by(latency)], 1)
                regions[tb] = amap.region(segment, domain if layout else -1, stack)
            else:
                stack = socket.interleave_order[tb % stacks]
                if layout is None:
                    regions[tb] = amap.region(0, -1, stack)
                else:
                    backs = layout.stack_domains[stack]
                    regions[tb] = amap.region(segment, backs[(tb // stacks) % len(backs)], stack)
        return regions

    def result(self, fallback: bool = True) -> Placement:
        gpus = []
        for g in range(self.plan.ngpus):
            frames: dict[int, int] = defaultdict(int)
            buffers = {}
            for buffer in BUFFERS:
                regions = self.pages.region[g][buffer]
                frame = np.empty(len(regions), dtype=np.int64)
                for page, region in enumerate(regions):
                    frame[page] = frames[int(region)]
                    frames[int(region)] += 1
                buffers[buffer] = BufferPages(regions.copy(), frame)
            flag_region = self.flag_regions(g)
            flag_frame = np.empty(len(flag_region), dtype=np.int64)
            for tb, region in enumerate(flag_region):
                flag_frame[tb] = frames[int(region)]
                frames[int(region)] += 1
            gpus.append(
                GpuPlacement(
                    self.tb_cu[g].copy(),
                    self.tb_domain[g].copy(),
                    buffers,
                    BufferPages(flag_region, flag_frame),
                )
            )
        return Placement(
            config=self.config,
            granularity=self.granularity,
            size=self.size,
            chunk_bytes=self.chunk_bytes,
            seed=self.seed,
            address_map=self.amap,
            gpus=tuple(gpus),
            fallback_tbs=sum(b.fallbacks for b in self.cus) if fallback else 0,
            fallback_chunks=sum(b.fallbacks for b in self.stacks) if fallback else 0,
            cu_used=tuple(b.used.copy() for b in self.cus),
            stack_used=tuple(b.used.copy() for b in self.stacks),
            layout_mode=self.pages.layout.mode,
            padding_bytes=self.pages.padding,
        )

    def run(self) -> Placement:
        config = self.config
        if config.threadblocks == "NAP":
            self.nap(place_pages=config.pages == "NAP")
        _ua_pages(self.pages, self.amap, self.granularity if self.nar else None)
        if config.threadblocks == "UA":
            self.tb_cu = _ua_threadblocks(self.plan, self.socket, self.seed)
        elif config.threadblocks == "NUMA":
            self.numa()
        return self.result()


# The finest granularity ``auto`` tries unless asked for finer: the paper evaluates 2 to 12
# NAR domains (section 6.5), the fine end being one domain per edge router of its system.
AUTO_MAX_DOMAINS = 12


def auto_granularities(socket: Socket, finest: int = AUTO_MAX_DOMAINS) -> tuple[int, ...]:
    return tuple(g for g in socket.valid_granularities if g <= finest)


def place(
    plan: Plan,
    size: int,
    pod: Pod,
    config: Configuration | str,
    granularity: int | str = 1,
    seed: int = 0,
    grouping: str = "all",
    layout: str = "aligned",
    finest: int = AUTO_MAX_DOMAINS,
) -> Placement:
    """Place ``plan`` at collective size ``size`` on ``pod`` under ``config``.

    ``granularity`` is the number of NAR domains (for NAR routing and for NAP's logical
    domains), or ``"auto"`` to try every valid one up to ``finest`` domains with the
    analytic estimate of ``estimate.py`` and keep the best. Configurations that use neither
    NAR nor NAP ignore it. ``grouping`` picks the chunks that form logical groups
    (``logical.py``); ``layout`` how chunks sit in pages (``BufferLayout``). The result is a
    pure function of its arguments; ``seed`` sets UA's dispatch order inside each die.
    """
    if grouping not in GROUPINGS:
        raise ConfigError(f"unknown grouping {grouping!r} (known: {', '.join(GROUPINGS)})")
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")
    config = configuration(config) if isinstance(config, str) else config
    socket = pod.socket
    if pod.sockets < plan.ngpus:
        raise ConfigError(f"the plan needs {plan.ngpus} GPUs but the pod has {pod.sockets} sockets")

    def placed(g: int) -> Placement:
        return _Placer(plan, size, pod, config, g, seed, grouping, layout).run()

    if not uses_domains(config):
        return placed(1)
    if granularity == "auto":
        candidates = [placed(g) for g in auto_granularities(socket, finest)]
        return min(candidates, key=lambda p: (estimate_ps(plan, p, pod), p.granularity))
    if not isinstance(granularity, int) or granularity not in socket.valid_granularities:
        raise ConfigError(
            f"NAR granularity {granularity!r} is not valid on this socket (valid: "
            f"{', '.join(map(str, socket.valid_granularities))}, or auto)"
        )
    return placed(granularity)
