"""Running a placed plan on the flow engine, with the packet engine's ``SimResult``.

What the flow engine does not give, and reports as missing (NaN): per-line store
latencies and their percentiles (its store table has one row per store *transfer*, with
the zero-load mean one-way latency of its lines in ``latency_ps``, and its ``p50``, ``p99``,
``max`` and ``min`` are NaN), the breakdown of a store's latency beyond its L1 part, the
egress port and stack of a store (a transfer spreads over many: -1), and the longest wait
and peak queue of a resource (a fluid has no queue). Completion times, lower bound, bytes,
resource flits, busy time and utilisation are given.
"""

from __future__ import annotations

import time
from functools import cache

import numpy as np
import pandas as pd

from nunasim.collectives.plan import Plan
from nunasim.engine.flow.columns import distinct_entries
from nunasim.engine.flow.demand import Demands, flow_demands
from nunasim.engine.flow.loop import FlowGraph, FlowLoads, run_flows
from nunasim.engine.flow.pipeline import overlap
from nunasim.engine.flow.rounds import window_floor_ps
from nunasim.engine.flow.tables import RouteTables, route_latencies, route_tables
from nunasim.engine.kernel.kinds import RESOURCE_NAMES
from nunasim.engine.lowering.resources import build_resources, resource_numbering
from nunasim.engine.lowering.steps import step_graph
from nunasim.engine.result import SimResult
from nunasim.errors import ConfigError
from nunasim.hardware import Pod
from nunasim.jit import scatter_at
from nunasim.mapping.accesses import LOAD, PROTOCOLS, STORE, WRITE, plan_accesses
from nunasim.mapping.placement import Placement
from nunasim.workload import DTYPE_BYTES

# Flows whose drains fall within this fraction of the current rate epoch after the first
# leave together (``loop``): a wave of near-simultaneous drains then costs one rate
# computation, at most this fraction of an epoch later than exact max-min fairness.
TOLERANCE = 0.01
# A screening run (``FlowRun.screen``) lets waves three times as wide through: it costs
# about two fifths of a run, and completed from 0.4 % earlier to 4.2 % later than the run
# over the 177 runs measured (docs/engine-measured.md, "Candidates screened with wider
# waves"; later mostly, as its steps start up to a wave late), so a screening run still
# unfinished SCREEN_MARGIN past a deadline marks a run that would end after it.
SCREEN_TOLERANCE = 0.03
SCREEN_MARGIN = 0.08
# The flow engine's memory is flat in the collective's size, but it visits every line once
# to count it (a few ns each) and keeps a table of a chunk's lines per protocol.
MAX_LINES = 1 << 33
MAX_CHUNK_LINES = 1 << 22


def admit_flow(plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
    """The lines the flow engine would count for ``plan``, in Python integers; a run
    beyond ``MAX_LINES``, or with chunks of more than ``MAX_CHUNK_LINES`` lines, is
    refused with what would fit."""
    per_chunk = -(-chunk_bytes // line_bytes)
    lines = int(plan_accesses(plan).count.sum()) * per_chunk
    if lines > MAX_LINES or per_chunk > MAX_CHUNK_LINES:
        fits = min(MAX_LINES * chunk_bytes // max(lines, 1), MAX_CHUNK_LINES * line_bytes)
        raise ConfigError(
            f"this run would move {lines:,} lines in chunks of {per_chunk:,} lines, more than "
            f"the flow engine's limits of {MAX_LINES:,} lines and {MAX_CHUNK_LINES:,} lines "
            f"a chunk: use a collective size of at most about "
            f"{max(plan.chunks_per_size * fits, 1):,} bytes, or fewer GPUs"
        )
    return lines


@cache
def _tables(pod: Pod) -> RouteTables:
    return route_tables(pod)


def _csr(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    start = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
    return start, np.array([x for items in lists for x in items], dtype=np.int64)


class FlowRun:
    """A placed plan ready to run on the flow engine: its demands and step graph are
    worked out, and so is its lower bound (``lower_bound_ps``: the larger of its zero-load
    critical path and the busiest resource's (n - 1) occupancies and latency), which a
    search can compare with the best run so far before paying for ``run``."""

    def __init__(
        self,
        pod: Pod,
        plan: Plan,
        placement: Placement,
        dtype: str = "bf16",
        tolerance: float = TOLERANCE,
    ) -> None:
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"unknown data type {dtype!r} (known: {', '.join(DTYPE_BYTES)})")
        started = time.perf_counter()
        self.pod, self.plan = pod, plan
        self.accesses = accesses = plan_accesses(plan)
        numbering = resource_numbering(pod, plan.ngpus)
        self.demands = demands = flow_demands(
            pod, plan, placement, accesses, numbering, _tables(pod), dtype
        )
        windows = range(numbering.total, numbering.total + plan.ngpus * pod.socket.cus)
        floor = window_floor_ps(
            demands, accesses.fetches, accesses.group, windows, pod.socket.outstanding_requests
        )
        polled = ~accesses.fetches & np.array([p.data_polled for p in PROTOCOLS])[accesses.protocol]
        self.graph = graph = step_graph(
            plan, placement, demands.access_lines[polled], accesses.transfer[polled]
        )
        flows = overlap(
            demands,
            accesses.fetches,
            accesses.group,
            floor,
            np.asarray(graph.step_tb, dtype=np.int64),
            np.asarray(graph.tb_cu, dtype=np.int64),
            windows,
            pod.socket.outstanding_requests,
        )
        flag_ps, _ = route_latencies(pod, numbering, graph.flags)
        steps = len(graph.step_tb)
        counter_flow = 2 * accesses.group[polled] + 1  # the delivery flow of the group
        succ_start, succ = _csr(graph.succ)
        release_start, release = _csr(graph.releases)
        group_start = np.searchsorted(demands.flow_step[::2], np.arange(steps + 1))

        nres = numbering.total + 2 * plan.ngpus * pod.socket.cus

        def arguments(
            run: Demands, delay: np.ndarray, floor: np.ndarray, entries: tuple | None = None
        ) -> tuple:
            counter_start = np.searchsorted(counter_flow, np.arange(len(run.flow_ops) + 1))
            step_graph_arrays = FlowGraph(
                np.array(graph.wait, dtype=np.int64),
                succ_start,
                succ,
                np.searchsorted(graph.flag_step, np.arange(steps + 1)).astype(np.int64),
                graph.flags.target.astype(np.int64),
                flag_ps,
                group_start.astype(np.int64),
                delay,
                counter_start.astype(np.int64),
                demands.access_route_max_ps[polled],
                release_start,
                release,
            )
            loads = FlowLoads(
                run.flow_ops,
                run.flow_tail_ps,
                floor,
                *(entries or (run.entry_start, run.entry_res, run.entry_coef)),
                nres,
                plan.ngpus * pod.socket.cus,
            )
            return step_graph_arrays, loads, float(tolerance)

        # The rates are shared over each distinct column of the demands once (``columns``:
        # the same rates, bit for bit, for a fraction of the work).
        run = flows.demands
        entries = distinct_entries(run.entry_start, run.entry_res, run.entry_coef, nres)
        self.arguments = arguments(run, flows.step_delay_ps, flows.floor_ps, entries)
        # The zero-load path stays a lower bound: every step in two phases, every flow done
        # its slowest line after it drains, and no window floor.
        nothing = np.zeros(steps, dtype=np.int64)
        critical = run_flows(*arguments(demands, nothing, np.zeros_like(floor)), True, -1)[1]
        self.resources = resources = build_resources(pod, numbering)
        self.used = used = np.nonzero(demands.res_flits)[0]
        flits = demands.res_flits[used]
        bound = (
            int(((flits - 1) * resources.occ[used] + resources.lat[used]).max()) if len(used) else 0
        )
        self.lower_bound_ps = max(int(critical.max()) if steps else 0, bound)
        self.prepare_s = time.perf_counter() - started

    def screen(self, deadline_ps: int) -> int | None:
        """A cheaper run with wider waves (``SCREEN_TOLERANCE``), stopped ``SCREEN_MARGIN``
        past ``deadline_ps``: None if it is still unfinished there, else its completion
        less the margin, which the run's own completion has never been below (a measured
        error band, not a bound)."""
        graph, loads, _ = self.arguments
        stop_ps = deadline_ps + int(deadline_ps * SCREEN_MARGIN)
        _, end, *_, cut = run_flows(graph, loads, SCREEN_TOLERANCE, False, stop_ps)
        if cut:
            return None
        return int(int(end.max()) / (1 + SCREEN_MARGIN)) if len(end) else 0

    def run(self, deadline_ps: int | None = None) -> SimResult | None:
        """Run it: flows share their resources by max-min fairness. With ``deadline_ps``,
        None once the run has passed that time unfinished: it would complete later."""
        started = time.perf_counter()
        pod, plan, graph, demands = self.pod, self.plan, self.graph, self.demands
        accesses, resources, used = self.accesses, self.resources, self.used
        stop_ps = -1 if deadline_ps is None else deadline_ps
        _, end, flow_begin, flow_drain, events, computations, _, cut = run_flows(
            *self.arguments, False, stop_ps
        )
        if cut:
            return None
        unfinished = np.nonzero(end < 0)[0]
        if len(unfinished):
            raise ConfigError(
                f"the flow engine stopped with {len(unfinished)} steps unfinished (first: step "
                f"{unfinished[0]}); the plan deadlocks in this model"
            )
        tb_gpu = np.array(graph.tb_gpu, dtype=np.int64)
        step_gpu = tb_gpu[np.array(graph.step_tb, dtype=np.int64)]
        gpu_done = np.zeros(plan.ngpus, dtype=np.int64)
        scatter_at(np.maximum, gpu_done, step_gpu, end)
        flits = demands.res_flits[used]
        completion = int(end.max()) if len(end) else 0
        delivering = np.isin(accesses.kind, (WRITE, STORE, LOAD))
        return SimResult(
            completion_ps=completion,
            gpu_completion_ps=gpu_done,
            stores=_stores(pod, accesses, demands, flow_begin, flow_drain),
            resources=pd.DataFrame(
                {
                    "kind": [RESOURCE_NAMES[k] for k in resources.kind[used]],
                    "gpu": resources.gpu[used],
                    "index": resources.index[used],
                    "flits": flits,
                    "busy_ps": flits * resources.occ[used],
                    "utilisation": flits * resources.occ[used] / max(completion, 1),
                    "max_wait_ps": np.full(len(used), np.nan),
                    "peak_queue": np.full(len(used), np.nan),
                }
            ),
            messages=int(demands.access_lines.sum()) + graph.flags.size,
            events=int(events + computations),
            wall_s=self.prepare_s + time.perf_counter() - started,
            bytes_delivered=int(demands.access_lines[delivering].sum()) * pod.socket.line_bytes,
            lower_bound_ps=self.lower_bound_ps,
            data_bytes_delivered=int(demands.access_data[delivering].sum()),
            engine="flow",
        )


def simulate_flow(
    pod: Pod, plan: Plan, placement: Placement, dtype: str = "bf16", tolerance: float = TOLERANCE
) -> SimResult:
    """Run ``plan`` at ``placement`` on ``pod``'s first ``plan.ngpus`` sockets."""
    result = FlowRun(pod, plan, placement, dtype, tolerance).run()
    assert result is not None  # only a deadline stops a run short
    return result


def _stores(
    pod: Pod, accesses, demands: Demands, flow_begin: np.ndarray, flow_drain: np.ndarray
) -> pd.DataFrame:
    """One row per store transfer: its lines, when its flow began and its last line landed,
    and the mean zero-load one-way latency of its lines."""
    stores = np.nonzero(accesses.kind == STORE)[0]
    if not len(stores):
        return pd.DataFrame(columns=["latency_ps"])
    flow = 2 * accesses.group[stores] + 1
    lines = demands.access_lines[stores]
    l1 = pod.socket.l1_latency_ps
    missing = np.full(len(stores), np.nan)
    return pd.DataFrame(
        {
            "transfer": accesses.transfer[stores],
            "src_gpu": accesses.gpu[stores],
            "dst_gpu": accesses.memory_gpu[stores],
            "egress_port": np.full(len(stores), -1),
            "dst_stack": np.full(len(stores), -1),
            "data_bytes": demands.access_data[stores],
            "lines": lines,
            "issue_ps": flow_begin[flow],
            "done_ps": flow_drain[flow] + demands.access_route_max_ps[stores],
            "latency_ps": demands.access_route_ps[stores] / lines - l1,
            "l1": np.full(len(stores), l1),
            "src_noc": missing,
            "port": missing,
            "plane": missing,
            "dst_noc": missing,
            "memory": missing,
        }
    )
