"""What a run reports, as tables.

**Store latency** is the one-way latency of a remote store: from its injection into the
source NoC (after the CU's L1 latency) to the completion of the write at the destination
stack (after the stack's access latency). Its breakdown: ``src_noc`` (injection to arrival
at the egress port), ``port`` (queue and serialisation at the egress port), ``plane`` (the
plane's latency and the queue at its output towards the destination port), ``dst_noc``
(ingress port to the stack), ``memory`` (queue and access at the stack); ``l1`` is the CU's
latency before injection, outside the one-way latency.

**Bytes delivered** (``bytes_delivered``) is every byte the collective moves from one
memory to another: each line it writes to a local stack, stores to another GPU, or loads
from another GPU into the loading CU, 256 B (a line) each. A local read is not counted on
its own (it feeds a write or a store, which is), nor are flags or a background GEMM's
traffic. These are wire bytes: under LL, LL128 and
MSCCL++ packets a line carries less data; the store table has the data bytes of each store
(``data_bytes``) and ``data_bytes_delivered`` the data of every delivery.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Literal

import numpy as np

from nunasim.engine.kernel.kinds import LOAD, RESOURCE_NAMES, STACK, STORE, WRITE
from nunasim.engine.lazy_table import Columns, LazyTable
from nunasim.errors import ConfigError
from nunasim.jit import scatter_at
from nunasim.units import PS_PER_NS

if TYPE_CHECKING:
    import pandas as pd

    from nunasim.engine.lowering.lower import Lowered


@dataclass(frozen=True)
class RunInfo:
    """What ran, as the scenario that ran it describes it (the engine sees only arrays)."""

    plan: str  # the plan's name
    collective: str
    gpus: int
    threadblocks: int  # per GPU (the most any GPU runs)
    size_bytes: int
    configuration: str  # one of the eight, e.g. "NAP+NAR"
    granularity: int  # NAR domains of the placement (1: none)
    seed: int


@dataclass(frozen=True, eq=False)
class SimResult:
    """One run's measurements: completion time, every remote store, every resource used.

    ``stores`` and ``resources`` are DataFrames; either may be given as ``Columns``, from
    which the DataFrame is built when first read (``LazyTable``).
    """

    completion_ps: int
    gpu_completion_ps: np.ndarray
    # Descriptors, not defaults: the fields have none (``LazyTable``).
    stores: pd.DataFrame = LazyTable()  # noqa: RUF009  one row per remote data store
    resources: pd.DataFrame = LazyTable()  # noqa: RUF009  one row per resource with a flit
    messages: int
    events: int
    wall_s: float
    bytes_delivered: int  # lines written, stored or loaded by the collective, in bytes
    lower_bound_ps: int
    data_bytes_delivered: int = 0  # the data in those bytes (less under LL, LL128, packets)
    info: RunInfo | None = None  # what ran; set by the scenario
    engine: str = "packet"  # the name of the engine that ran it (``nunasim.engine.base``)
    engine_revision: int = 0  # the revision of that engine's model
    # Data bytes written or stored at each [GPU, stack] by the collective; None: not given.
    stack_bytes: np.ndarray | None = None

    def replaced(self, **changes: object) -> SimResult:
        """A copy with ``changes``, as ``dataclasses.replace`` makes one but without reading
        the tables (which would build their DataFrames and load pandas)."""
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"SimResult has no field {', '.join(sorted(unknown))}")
        copy = object.__new__(SimResult)
        copy.__dict__.update(self.__dict__)
        for name, value in changes.items():
            if name in ("stores", "resources"):
                vars(SimResult)[name].__set__(copy, value)
            else:
                copy.__dict__[name] = value
        return copy

    def store_latency_ns(self) -> dict[str, float]:
        """One-way store latency: mean, p50, p99, max and min, in ns. A store table of
        transfers rather than lines (the flow engine's: it has a ``lines`` column) gives the
        mean only (of its transfers' means, weighted by their lines); the others are NaN."""
        latency = self._store_column("latency_ps") / PS_PER_NS
        if not len(latency):
            return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0, "min": 0.0}
        if _STORES.has(self, "lines"):
            mean = float(np.average(latency, weights=self._store_column("lines")))
            return {"mean": mean, "p50": np.nan, "p99": np.nan, "max": np.nan, "min": np.nan}
        return {
            "mean": float(latency.mean()),
            "p50": float(np.percentile(latency, 50)),
            "p99": float(np.percentile(latency, 99)),
            "max": float(latency.max()),
            "min": float(latency.min()),
        }

    def busiest_ps(self, kind: str) -> int:
        """The busy time of the busiest resource of ``kind`` (a ``resources`` kind: "link",
        "port", "plane", "stack", ...): the flits it carried times its occupancy."""
        resources = self.resources
        return int(resources.loc[resources["kind"] == kind, "busy_ps"].max())

    def to_row(self) -> dict[str, object]:
        """The headline figures of the run as one flat row: what ran (``RunInfo``), then
        completion and lower bound (ps), store latency (ns), bytes, stores and events."""
        latency = self.store_latency_ns()
        row: dict[str, object] = asdict(self.info) if self.info else {}
        row.update(
            {
                "engine": self.engine,
                "completion_ps": self.completion_ps,
                "lower_bound_ps": self.lower_bound_ps,
                **{f"store_{k}_ns": latency[k] for k in ("mean", "p50", "p99", "max")},
                "bytes_delivered": self.bytes_delivered,
                "data_bytes_delivered": self.data_bytes_delivered,
                "stores": self._store_rows(),
                "messages": self.messages,
                "events": self.events,
                "wall_s": self.wall_s,
            }
        )
        return row

    def to_frame(self, table: Literal["stores", "resources"] = "stores") -> pd.DataFrame:
        """A copy of the per-store (``stores``) or per-resource (``resources``) table, led by
        columns saying what ran, so that the tables of several runs concatenate."""
        tables = {"stores": self.stores, "resources": self.resources}
        if table not in tables:
            raise ConfigError(f"no table {table!r} (known: {', '.join(tables)})")
        frame = tables[table].copy()
        for column, (name, value) in enumerate(asdict(self.info).items() if self.info else ()):
            frame.insert(column, name, value)
        return frame

    def summary(self) -> dict[str, object]:
        """The figures ``nunasim simulate --json`` prints (times in ns)."""
        stores = self._store_rows()
        # The mean pandas gives (float64 sums, pairwise as numpy's), without loading pandas.
        breakdown = {
            column: float(self._store_column(column).mean(dtype=np.float64) / PS_PER_NS)
            if stores
            else 0.0
            for column in ("l1", "src_noc", "port", "plane", "dst_noc", "memory")
        }
        return {
            "engine": self.engine,
            "completion_ns": self.completion_ps / PS_PER_NS,
            "gpu_completion_ns": [float(x) / PS_PER_NS for x in self.gpu_completion_ps],
            "lower_bound_ns": self.lower_bound_ps / PS_PER_NS,
            "store_latency_ns": self.store_latency_ns(),
            "store_breakdown_ns": breakdown,
            "stores": stores,
            "bytes_delivered": self.bytes_delivered,
            "data_bytes_delivered": self.data_bytes_delivered,
            "messages": self.messages,
            "events": self.events,
            "wall_s": self.wall_s,
        }

    def _store_column(self, name: str) -> np.ndarray:
        return _STORES.column(self, name)

    def _store_rows(self) -> int:
        return _STORES.rows(self)


# The descriptor itself (reading it from the class would ask it for a default).
_STORES: LazyTable = vars(SimResult)["stores"]


def deliveries(lo: Lowered, done: np.ndarray) -> tuple[int, int, np.ndarray]:
    """What the collective's messages (a background GEMM's aside) deliver: the wire bytes
    of every line written, stored or loaded (``bytes_delivered``), the data in them, and
    the data bytes written or stored at each [GPU, stack] by those that are ``done``."""
    collective = ~lo.step_background
    data = np.nonzero(np.isin(lo.msg_kind, (WRITE, STORE, LOAD)))[0]
    data = data[collective[lo.lineop_step[lo.msg_lineop[data]]]]
    landed = np.nonzero(np.isin(lo.msg_kind, (STORE, WRITE)) & done)[0]
    landed = landed[collective[lo.lineop_step[lo.msg_lineop[landed]]]]
    stacks = int(np.count_nonzero(lo.resources.kind == STACK)) // max(lo.ngpus, 1)
    stack_bytes = np.zeros((lo.ngpus, stacks), dtype=np.int64)
    scatter_at(
        np.add, stack_bytes, (lo.msg_dst_gpu[landed], lo.msg_stack[landed]), lo.msg_bytes[landed]
    )
    return len(data) * lo.line_bytes, int(lo.msg_bytes[data].sum()), stack_bytes


def store_table(lo: Lowered, stores: np.ndarray, measured: Columns) -> Columns:
    """A per-store table: the columns that say which store each row is (``stores``: message
    ids; its message, GPUs, egress port, stack and data bytes), then ``measured``. Without
    stores, the one column an empty DataFrame of the table has."""
    if not len(stores):
        return {"latency_ps": np.empty(0, dtype=object)}
    return {
        "message": stores,
        "src_gpu": lo.tb_gpu[lo.step_tb[lo.lineop_step[lo.msg_lineop[stores]]]],
        "dst_gpu": lo.msg_dst_gpu[stores],
        "egress_port": lo.msg_port[stores],
        "dst_stack": lo.msg_stack[stores],
        "data_bytes": lo.msg_bytes[stores],
        **measured,
    }


def gpu_completions(lo: Lowered, step_end: np.ndarray) -> np.ndarray:
    """Each GPU's completion: the end of its last collective step (background work aside)."""
    collective = ~lo.step_background
    done = np.zeros(lo.ngpus, dtype=np.int64)
    scatter_at(np.maximum, done, lo.tb_gpu[lo.step_tb[collective]], step_end[collective])
    return done


def resource_identity(lo: Lowered, used: np.ndarray) -> Columns:
    """The columns that say which resource each row of a per-resource table is."""
    res = lo.resources
    return {
        "kind": np.array(RESOURCE_NAMES, dtype=object)[res.kind[used]],
        "gpu": res.gpu[used],
        "index": res.index[used],
    }
