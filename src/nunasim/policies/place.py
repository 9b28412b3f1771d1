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
The sequential decisions (a CU per threadblock, a stack per chunk and per flag page, under
the budgets) run as one compiled pass (``assign.py``); what depends on the plan alone is
worked out once per plan (``facts.py``); pages live in one flat array (``pages.py``).
Distances are zero-load NoC latencies (``Socket.router_paths``), so a die crossing costs
what it costs the traffic.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from nunasim.arrays import unique_rows
from nunasim.collectives.plan import Plan, lines_for
from nunasim.errors import ConfigError
from nunasim.hardware import Pod, Socket
from nunasim.mapping.address import AddressMap
from nunasim.mapping.buffer_layout import LAYOUTS, BufferLayout
from nunasim.mapping.domains import domain_layout
from nunasim.mapping.line_counts import PageTables, count_stack_lines, region_columns
from nunasim.mapping.placement import (
    BUFFERS,
    BufferPages,
    GpuPlacement,
    PageTable,
    Placement,
    PlacementRule,
)
from nunasim.policies.assign import (
    ChunkPages,
    CuChoices,
    StackChoices,
    Threadblocks,
    assign_threadblocks,
    place_flags,
)
from nunasim.policies.budget import cu_budget, stack_budget
from nunasim.policies.configurations import configuration, uses_domains
from nunasim.policies.dispatch import die_orders, ua_cus
from nunasim.policies.estimate import estimate_ps
from nunasim.policies.facts import PlanFacts, Processing, plan_facts
from nunasim.policies.logical import GROUPINGS
from nunasim.policies.pages import Pages, page_frames, round_robin_regions, ua_pages


def _ua_threadblocks(plan: Plan, socket: Socket, seed: int) -> list[np.ndarray]:
    """UA dispatch on every GPU; the dies' dispatch orders come from ``seed`` and are the
    same on every GPU (identical sockets, identical dispatchers)."""
    dispatched: dict[int, np.ndarray] = {}
    for p in plan.gpus:
        count = len(p.threadblocks)
        if count not in dispatched:
            dispatched[count] = ua_cus(socket, count, np.random.default_rng(seed))
    return [dispatched[len(p.threadblocks)].copy() for p in plan.gpus]


def _order_by(values: np.ndarray) -> np.ndarray:
    """Indices by increasing value, the lower index first among equals (along the last
    axis)."""
    return np.argsort(values, axis=-1, kind="stable")


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
        numa_reading: str = "first-fit",
    ) -> None:
        self.plan, self.pod, self.config, self.seed = plan, pod, config, seed
        self.numa_reading = numa_reading
        self.grouping = grouping
        self.socket = socket = pod.socket
        self.granularity = granularity
        self.nar = config.nar and granularity > 1
        self.amap = AddressMap(socket, (granularity,) if self.nar else ())
        self.chunk_bytes = plan.chunk_bytes(size)
        self.size = size
        self.lines_per_chunk = lines_for(self.chunk_bytes, socket.line_bytes)
        self.pages = Pages(
            plan, BufferLayout(self.chunk_bytes, socket.line_bytes, socket.page_bytes, layout)
        )
        self.cus = cu_budget(socket)
        self.stacks = stack_budget(socket)
        self.cu_used = np.zeros((plan.ngpus, socket.cus), dtype=np.int64)
        self.cu_count = np.zeros((plan.ngpus, socket.cus), dtype=np.int64)
        self.stack_used = np.zeros((plan.ngpus, len(socket.stacks)), dtype=np.int64)
        self.cu_fallbacks = self.stack_fallbacks = 0
        self.latency = socket.router_paths.latency_ps
        self.cu_routers = socket.router_of_cu
        self.stack_routers = socket.stack_routers
        self.tb_cu = [np.full(len(p.threadblocks), -1, dtype=np.int64) for p in plan.gpus]
        self.tb_domain = [np.full(len(p.threadblocks), -1, dtype=np.int64) for p in plan.gpus]

    # --- decisions in a compiled pass ----------------------------------------------------

    @cached_property
    def facts(self) -> PlanFacts:
        """What the plan-only inputs are (UA needs none of them)."""
        return plan_facts(self.plan)

    @cached_property
    def _stack_orders(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``assign_threadblocks``' stack candidates per (domain, router) and per domain's
        ports, their lengths, and each domain's regions (``assign.py``)."""
        socket, g = self.socket, self.granularity
        layout = domain_layout(socket, g)
        segment = self.amap.segment(g if self.nar else None)
        stacks = len(socket.stacks)
        routers = self.latency.shape[0]
        orders = np.full((g * routers + g, stacks), -1, dtype=np.int64)
        lengths = np.zeros(g * routers + g, dtype=np.int64)
        region_of = np.full((g, stacks), -1, dtype=np.int64)
        for d in range(g):
            allowed = np.array(layout.stacks[d]) if self.nar else np.arange(stacks)
            near_cu = allowed[_order_by(self.latency[:, self.stack_routers[allowed]])]
            orders[d * routers : (d + 1) * routers, : len(allowed)] = near_cu
            lengths[d * routers : (d + 1) * routers] = len(allowed)
            near_ports = allowed[_order_by(layout.router_distance[d][self.stack_routers[allowed]])]
            orders[g * routers + d, : len(allowed)] = near_ports
            lengths[g * routers + d] = len(allowed)
            for s in allowed.tolist():
                region_of[d, s] = self.amap.region(segment, d if self.nar else -1, s)
        return orders, lengths, region_of

    def _assign(
        self,
        order: Processing,
        rows: np.ndarray,
        cu_orders: np.ndarray,
        place_pages: bool = False,
    ) -> None:
        """Run ``assign_threadblocks`` over the threadblocks of ``order``, each choosing
        among the CUs of its row of ``cu_orders``, and with ``place_pages`` placing the
        chunks it touches."""
        demands = self.facts.demands(
            self.chunk_bytes, self.socket.line_bytes, self.socket.outstanding_requests
        )
        demand = np.concatenate(demands)[np.cumsum([0, *map(len, demands)])[order.gpu] + order.tb]
        tb_cu = np.empty(len(order.gpu), dtype=np.int64)
        if place_pages:
            orders, lengths, region_of = self._stack_orders
            first, last = self.pages.chunk_pages(order.owner, order.buffer, order.chunk)
            toucher = np.repeat(order.gpu, np.diff(order.chunk_start))
            chunk_start, owner, near_ports = order.chunk_start, order.owner, order.owner != toucher
        else:
            chunk_start = np.zeros(len(order.gpu) + 1, dtype=np.int64)
            owner = first = last = np.zeros(0, dtype=np.int64)
            near_ports = np.zeros(0, dtype=bool)
            orders, lengths, region_of = (
                np.zeros((1, 1), dtype=np.int64),
                np.zeros(0, dtype=np.int64),
                np.zeros((1, 1), dtype=np.int64),
            )
        cu_fallbacks, stack_fallbacks = assign_threadblocks(
            Threadblocks(order.gpu, rows.astype(np.int64), demand, tb_cu),
            CuChoices(
                cu_orders.astype(np.int64),
                self.cus.capacity,
                self.cu_used,
                self.cu_count,
                int(self.cus.residents or np.iinfo(np.int64).max),
                self.cu_routers.astype(np.int64),
            ),
            ChunkPages(chunk_start, owner, first, last, near_ports, self.lines_per_chunk),
            StackChoices(
                self.latency.shape[0],
                orders,
                lengths,
                self.stacks.capacity,
                self.stack_used,
                region_of,
            ),
            self.pages.region,
        )
        self.cu_fallbacks += cu_fallbacks
        self.stack_fallbacks += stack_fallbacks
        for g in range(self.plan.ngpus):
            mine = order.gpu == g
            self.tb_cu[g][order.tb[mine]] = tb_cu[mine]

    # --- NAP --------------------------------------------------------------------------

    def nap(self, place_pages: bool) -> None:
        layout = domain_layout(self.socket, self.granularity)
        order = self.facts.processing(self.grouping)
        # Algorithm 1, line 12: the groups go round-robin to the domains, the first to 1.
        rows = (order.group + 1) % self.granularity
        for g in range(self.plan.ngpus):
            mine = order.gpu == g
            self.tb_domain[g][order.tb[mine]] = rows[mine]
        cu_orders = np.stack(
            [layout.cus_by_distance(self.socket, d) for d in range(self.granularity)]
        )
        self._assign(order, rows, cu_orders, place_pages)

    # --- NUMA -------------------------------------------------------------------------

    def numa(self) -> None:
        """Threadblocks near the memory they access (Algorithm 1's scheduling with baseline
        pages, as the paper's NUMA proxy runs it); pages must already be placed."""
        socket = self.socket
        provisional = self.result(fallback=False)
        router_cost_base = self.latency[:, self.stack_routers]  # [router, stack]
        stacks = len(socket.stacks)
        order = self.facts.processing(self.grouping)
        touched = self.facts.local_touches(self.grouping)
        # every line of each chunk, on the stack its page (UA) puts it on
        hits = np.zeros((len(order.gpu), stacks), dtype=np.int64)
        count_stack_lines(
            *touched.T.copy(),  # member, owner, buffer, chunk
            self.lines_per_chunk,
            PageTables.of(provisional, int(touched[:, 3].max(initial=-1)) + 1),
            region_columns(self.amap).stack,
            hits,
        )
        if self.numa_reading == "die-even":
            self._numa_die_even(order, hits)
            return
        distinct, row = unique_rows(hits)
        cost = (router_cost_base @ distinct.astype(np.float64).T).T[:, self.cu_routers]
        self._assign(order, row, _order_by(cost))  # cost: [distinct, cu]

    def _numa_die_even(self, order: Processing, hits: np.ndarray) -> None:
        """Section 3.3's other reading of the NUMA proxy: a threadblock goes to the die that
        holds most of its local lines, and each die's threadblocks are dispatched over the
        die as UA dispatches them (``dispatch.die_orders``, one CU per router per pass)."""
        socket = self.socket
        die_of_stack = np.array([socket.die_of_router[r] for r in self.stack_routers])
        per_die = np.zeros((hits.shape[0], len(socket.dies)), dtype=np.int64)
        for stack, die in enumerate(die_of_stack):
            per_die[:, die] += hits[:, stack]
        orders = die_orders(socket, np.random.default_rng(self.seed))
        has_cus = np.array([bool(o) for o in orders])
        per_die[:, ~has_cus] = -1  # a die without compute units takes none
        chosen = per_die.argmax(axis=1)  # the first such die among equals
        for g in range(self.plan.ngpus):
            received = [0] * len(orders)
            for i in np.nonzero(order.gpu == g)[0]:
                die = int(chosen[i])
                cus = orders[die]
                self.tb_cu[g][order.tb[i]] = cus[received[die] % len(cus)]
                received[die] += 1

    # --- result -----------------------------------------------------------------------

    def flag_regions(self, gpu: int) -> np.ndarray:
        """The region of each threadblock's flag page (the flags peers write for it).

        With NAP pages a flag sits on the stack nearest its threadblock's CU (among the
        stacks backing its domain under NAR); otherwise flag pages go round-robin over the
        stacks like UA's pages, in threadblock order."""
        count = len(self.tb_cu[gpu])
        if self.config.pages != "NAP":
            return round_robin_regions(self.amap, self.granularity if self.nar else None, count)
        orders, lengths, region_of = self._stack_orders
        regions = np.empty(count, dtype=np.int64)
        self.stack_fallbacks += place_flags(
            self.tb_cu[gpu],
            np.maximum(self.tb_domain[gpu], 0),
            self.cu_routers.astype(np.int64),
            self.latency.shape[0],
            orders,
            lengths,
            self.stacks.capacity,
            self.stack_used[gpu],
            region_of,
            regions,
        )
        return regions

    def result(self, fallback: bool = True) -> Placement:
        pages = self.pages
        # the buffers' pages stay in the placer's flat table; each GPU's are views of it
        frames = np.empty_like(pages.region)
        gpus = []
        for g in range(self.plan.ngpus):
            flag_region = self.flag_regions(g)
            own = pages.gpu_pages(g)
            # a GPU's frames count its buffers' pages, then its flag pages, in order
            taken = np.zeros(len(self.amap.regions), dtype=np.int64)
            page_frames(pages.region[own], taken, out=frames[own])
            flag_frames = page_frames(flag_region, taken)
            buffers, at = {}, own.start
            for b, buffer in enumerate(BUFFERS):
                count = int(pages.counts[g, b])
                buffers[buffer] = BufferPages(
                    pages.region[at : at + count], frames[at : at + count]
                )
                at += count
            gpus.append(
                GpuPlacement(
                    self.tb_cu[g].copy(),
                    self.tb_domain[g].copy(),
                    buffers,
                    BufferPages(flag_region, flag_frames),
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
            fallback_tbs=self.cu_fallbacks if fallback else 0,
            fallback_chunks=self.stack_fallbacks if fallback else 0,
            cu_used=tuple(self.cu_used.copy()),
            stack_used=tuple(self.stack_used.copy()),
            layout_mode=pages.layout.mode,
            padding_bytes=pages.padding,
            built_pages=PageTable(pages.region, frames, pages.first),
        )

    def run(self) -> Placement:
        config = self.config
        if config.threadblocks == "NAP":
            self.nap(place_pages=config.pages == "NAP")
        ua_pages(self.pages, self.amap, self.granularity if self.nar else None)
        if config.threadblocks == "UA":
            self.tb_cu = _ua_threadblocks(self.plan, self.socket, self.seed)
        elif config.threadblocks == "NUMA":
            self.numa()
        return self.result()


# Readings of section 3.3's NUMA proxy (``place``'s ``numa_reading``).
NUMA_READINGS = ("first-fit", "die-even")

# The finest granularity ``auto`` tries unless asked for finer: the paper evaluates 2 to 12
# NAR domains (section 6.5), the fine end being one domain per edge router of its system.
AUTO_MAX_DOMAINS = 12


def auto_granularities(socket: Socket, finest: int = AUTO_MAX_DOMAINS) -> tuple[int, ...]:
    return tuple(g for g in socket.valid_granularities if g <= finest)


def place(
    plan: Plan,
    size: int,
    pod: Pod,
    config: PlacementRule | str,
    granularity: int | str = 1,
    seed: int = 0,
    grouping: str = "all",
    layout: str = "aligned",
    finest: int = AUTO_MAX_DOMAINS,
    numa_reading: str = "first-fit",
) -> Placement:
    """Place ``plan`` at collective size ``size`` on ``pod`` under ``config``.

    ``granularity`` is the number of NAR domains (for NAR routing and for NAP's logical
    domains), or ``"auto"`` to try every valid one up to ``finest`` domains with the
    analytic estimate of ``estimate.py`` and keep the best. Configurations that use neither
    NAR nor NAP ignore it. ``grouping`` picks the chunks that form logical groups
    (``logical.py``); ``layout`` how chunks sit in pages (``BufferLayout``). The result is a
    pure function of its arguments; ``seed`` sets UA's dispatch order inside each die.
    ``numa_reading``: how the NUMA proxy places threadblocks (``NUMA_READINGS``):
    ``first-fit``, the first CU with budget by distance to the data (the configurations'),
    or ``die-even``, the die holding most of the data, dispatched over it as UA does.
    """
    if numa_reading not in NUMA_READINGS:
        raise ConfigError(
            f"unknown NUMA reading {numa_reading!r} (known: {', '.join(NUMA_READINGS)})"
        )
    if grouping not in GROUPINGS:
        raise ConfigError(f"unknown grouping {grouping!r} (known: {', '.join(GROUPINGS)})")
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")
    config = configuration(config) if isinstance(config, str) else config
    socket = pod.socket
    if pod.sockets < plan.ngpus:
        raise ConfigError(f"the plan needs {plan.ngpus} GPUs but the pod has {pod.sockets} sockets")

    def placed(g: int) -> Placement:
        return _Placer(plan, size, pod, config, g, seed, grouping, layout, numa_reading).run()

    if not uses_domains(config):
        return placed(1)
    if granularity == "auto":
        # one candidate at a time beside the best so far: a 1 GB collective's page tables
        # are hundreds of MB a placement
        best: tuple[tuple[float, int], Placement] | None = None
        for g in auto_granularities(socket, finest):
            candidate = placed(g)
            key = (estimate_ps(plan, candidate, pod), candidate.granularity)
            if best is None or key < best[0]:
                best = (key, candidate)
            del candidate
        if best is None:
            raise ConfigError(f"this socket has no NAR granularity of at most {finest} domains")
        return best[1]
    if not isinstance(granularity, int) or granularity not in socket.valid_granularities:
        raise ConfigError(
            f"NAR granularity {granularity!r} is not valid on this socket (valid: "
            f"{', '.join(map(str, socket.valid_granularities))}, or auto)"
        )
    return placed(granularity)
