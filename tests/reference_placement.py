"""The placement policies as first written: a Python loop per threadblock and per chunk
over ``Budget`` objects, kept as the reference that the compiled placement
(``nunasim.policies.place``) must equal decision for decision."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from nunasim.collectives.access import access_sets
from nunasim.collectives.plan import Buffer, Plan
from nunasim.hardware import Pod, Socket
from nunasim.mapping.address import AddressMap
from nunasim.mapping.buffer_layout import BufferLayout
from nunasim.mapping.domains import domain_layout
from nunasim.mapping.placement import BUFFERS, BufferPages, GpuPlacement, Placement, PlacementRule
from nunasim.policies.budget import cu_budget, stack_budget, tb_demand
from nunasim.policies.configurations import configuration
from nunasim.policies.dispatch import die_orders
from nunasim.policies.logical import logical_allocation


def _ua_cus(socket: Socket, count: int, rng: np.random.Generator) -> np.ndarray:
    """UA dispatch, threadblock by threadblock: the die's first CU with the fewest."""
    orders = [order for order in die_orders(socket, rng) if order]
    load = np.zeros(socket.cus, dtype=np.int64)
    cus = np.empty(count, dtype=np.int64)
    for t in range(count):
        order = orders[t % len(orders)]
        least = min(load[c] for c in order)
        cus[t] = next(c for c in order if load[c] == least)
        load[cus[t]] += 1
    return cus


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


def _order_by(values: np.ndarray) -> np.ndarray:
    """Indices by increasing value, the lower index first among equals."""
    return np.lexsort((np.arange(len(values)), values))


class _Placer:
    def __init__(
        self,
        plan: Plan,
        size: int,
        pod: Pod,
        config: PlacementRule,
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
                demand = tb_demand(
                    plan, gpu, tb, self.chunk_bytes, socket.line_bytes, socket.outstanding_requests
                )
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
                demand = tb_demand(
                    plan, gpu, tb, self.chunk_bytes, socket.line_bytes, socket.outstanding_requests
                )
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
            self.tb_cu = [
                _ua_cus(self.socket, len(p.threadblocks), np.random.default_rng(self.seed))
                for p in self.plan.gpus
            ]
        elif config.threadblocks == "NUMA":
            self.numa()
        return self.result()


def reference_place(
    plan: Plan,
    size: int,
    pod: Pod,
    config: PlacementRule | str,
    granularity: int,
    seed: int = 0,
    grouping: str = "all",
    layout: str = "aligned",
) -> Placement:
    """``place`` at one granularity, the reference way."""
    config = configuration(config) if isinstance(config, str) else config
    if not (config.nar or config.threadblocks == "NAP"):
        granularity = 1
    return _Placer(plan, size, pod, config, granularity, seed, grouping, layout).run()
