"""A whole result-cache row, as a sweep stores one, for tests that write entries."""

ROW = {
    "preset": "nextgen-4die",
    "plan": "allgather",
    "collective": "allgather",
    "gpus": 8,
    "threadblocks": 56,
    "size_bytes": 1_000_000,
    "configuration": "NAP+NAR",
    "granularity": 4,
    "seed": 0,
    "engine": "packet",
    "completion_ps": 3_000_000,
    "lower_bound_ps": 2_000_000,
    "store_mean_ns": 900.0,
    "store_p50_ns": 880.0,
    "store_p99_ns": float("nan"),  # too few stores for a percentile: stored as NaN
    "store_max_ns": 1200.0,
    "bytes_delivered": 7_000_000,
    "data_bytes_delivered": 7_000_000,
    "stores": 100,
    "messages": 300,
    "events": 1000,
    "wall_s": 0.5,
    "point_s": 2.0,
}


def row_of(completion_ps: int) -> dict:
    """A whole row that says a point took ``completion_ps``."""
    return {**ROW, "completion_ps": completion_ps, "lower_bound_ps": 0}
