"""BookSim2 beside nunasim's router model: reference latency-throughput curves and run times.

Run: python benchmarks/booksim_reference.py --booksim PATH [curves | saturation | all]
     [--out benchmarks/booksim] [--workers N] [--patterns uniform,transpose,hotspot]

``PATH`` is a BookSim2 executable you built yourself from its public sources (nothing of
BookSim2 is in this repository, nor any recipe that builds it). The script writes one
configuration per point, runs it, and reads BookSim's printed statistics:

- ``curves``: ``curves.csv``, uniform (self-traffic included, as BookSim draws it),
  transpose and hotspot traffic (every packet to one of the four central routers) with 1-
  and 4-flit packets over a ladder of offered loads, in BookSim's
  latency mode (3 warm-up periods of 10,000 cycles, then sampling until the statistics
  converge). A point past saturation is recorded as unstable with no latency.
- ``saturation``: ``saturation.csv``, the accepted throughput at an offered load of 1.0
  flit/node/cycle in BookSim's throughput mode (the saturation throughput).

Both configure the reference router of the ``mesh8x8-vc`` preset: an 8 x 8 mesh with
dimension-order routing, 2 virtual channels of 8 flits, 1-cycle route, VC-allocation,
switch-allocation and switch-traversal stages, 1-cycle channels, credits returned over
1-cycle channels with no extra delay, single-iteration iSLIP allocators, input and output
speedup 1 and ``wait_for_tail_credit = 0`` (BookSim's defaults where the preset says
nothing). ``booksim_seconds`` times one fixed-length run of a k1 x k2 mesh for
``noc_rate.py``.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROUTER = {  # the mesh8x8-vc router in BookSim's words
    "num_vcs": 2,
    "vc_buf_size": 8,
    "wait_for_tail_credit": 0,
    "vc_allocator": "islip",
    "sw_allocator": "islip",
    "alloc_iters": 1,
    "credit_delay": 0,
    "routing_delay": 1,
    "vc_alloc_delay": 1,
    "sw_alloc_delay": 1,
    "st_final_delay": 1,
    "input_speedup": 1,
    "output_speedup": 1,
    "internal_speedup": 1.0,
    "use_read_write": 0,
}
MESH = {"topology": "mesh", "k": 8, "n": 2, "routing_function": "dor"}
LATENCY_MODE = {"sim_type": "latency", "warmup_periods": 3, "sample_period": 10_000}
THROUGHPUT_MODE = {"sim_type": "throughput", "warmup_periods": 3, "sample_period": 10_000}

LADDERS = {  # offered loads (flits/node/cycle) per (pattern, flits per packet)
    ("uniform", 1): [0.05, 0.1, 0.15, 0.2, 0.25, 0.26, 0.27, 0.28, 0.29, 0.3, 0.35],
    ("uniform", 4): [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.32, 0.34, 0.35, 0.36, 0.38, 0.4],
    ("transpose", 1): [0.02, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.15],
    ("transpose", 4): [0.02, 0.05, 0.08, 0.1, 0.11, 0.12, 0.13, 0.14, 0.15, 0.2],
    ("hotspot", 1): [0.01, 0.02, 0.03, 0.04, 0.05, 0.055, 0.06, 0.065],
    ("hotspot", 4): [0.01, 0.02, 0.03, 0.04, 0.05, 0.055, 0.06, 0.065],
}
# hotspot: every packet to one of the four routers at the mesh's centre, (3, 3), (4, 3),
# (3, 4) and (4, 4), with equal weights (BookSim's hotspot pattern sends nothing else).
HOTSPOTS = (27, 28, 35, 36)

_STAT = {
    "latency": re.compile(r"^Packet latency average = ([0-9.eE+-]+) \("),
    "accepted": re.compile(r"^Accepted flit rate average = ([0-9.eE+-]+) \("),
    "injected": re.compile(r"^Injected flit rate average = ([0-9.eE+-]+) \("),
    "cycles": re.compile(r"^Time taken is (\d+) cycles"),
}


@dataclass(frozen=True)
class Point:
    pattern: str
    packet_flits: int
    offered: float
    stable: bool
    latency: float | None
    accepted: float | None
    injected: float | None
    cycles: int | None
    wall_s: float


def config_text(settings: dict[str, object]) -> str:
    return "".join(f"{key} = {value};\n" for key, value in settings.items())


def run_booksim(booksim: Path, settings: dict[str, object]) -> tuple[dict[str, float], float]:
    """One BookSim run: the last value of each statistic it printed, and its wall time."""
    with tempfile.TemporaryDirectory() as scratch:
        cfg = Path(scratch) / "run.cfg"
        cfg.write_text(config_text(settings))
        started = time.perf_counter()
        done = subprocess.run([str(booksim), str(cfg)], capture_output=True, text=True)
        wall = time.perf_counter() - started
    # BookSim exits non-zero after a run that ends unstable and, in this version, after
    # a good one too: a finished run is one that printed its run time.
    if "Total run time" not in done.stdout:
        raise RuntimeError(f"booksim failed on {settings}: {done.stdout[-2000:]}{done.stderr}")
    stats: dict[str, float] = {}
    for line in done.stdout.splitlines():
        for name, pattern in _STAT.items():
            match = pattern.match(line.strip())
            if match:
                stats[name] = float(match.group(1))
    stats["unstable"] = float("Simulation unstable" in done.stdout)
    return stats, wall


def booksim_traffic(pattern: str) -> str:
    if pattern == "hotspot":  # a list inside a pattern takes two braces in its configuration
        return "hotspot({{" + ",".join(map(str, HOTSPOTS)) + "}})"
    return pattern


def point(booksim: Path, pattern: str, flits: int, offered: float, mode: dict) -> Point:
    traffic = booksim_traffic(pattern)
    settings = {**MESH, **ROUTER, **mode, "traffic": traffic, "packet_size": flits}
    settings["injection_rate"] = offered
    settings["injection_rate_uses_flits"] = 1
    stats, wall = run_booksim(booksim, settings)
    stable = not stats["unstable"] and "latency" in stats
    return Point(
        pattern,
        flits,
        offered,
        stable,
        stats.get("latency") if stable else None,
        stats.get("accepted"),
        stats.get("injected"),
        int(stats["cycles"]) if "cycles" in stats else None,
        wall,
    )


def write(points: list[Point], path: Path) -> None:
    """Write ``points``, keeping the rows of ``path`` for the curves they do not cover."""
    path.parent.mkdir(parents=True, exist_ok=True)
    covered = {(p.pattern, p.packet_flits) for p in points}
    kept = []
    if path.exists():
        with path.open() as old:
            for row in csv.DictReader(old):
                if (row["pattern"], int(row["packet_flits"])) not in covered:
                    kept.append(row)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(Point.__dataclass_fields__)
        rows = [["" if v is None else v for v in p.__dict__.values()] for p in points]
        rows += [list(row.values()) for row in kept]
        for row in sorted(rows, key=lambda r: (r[0], int(r[1]), float(r[2]))):
            writer.writerow(row)
    print(f"wrote {path} ({len(points)} points, {len(kept)} kept)")


def curves(booksim: Path, workers: int, patterns: list[str]) -> list[Point]:
    ladders = {key: rates for key, rates in LADDERS.items() if key[0] in patterns}
    jobs = [(pat, fl, r) for (pat, fl), rates in ladders.items() for r in rates]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda j: point(booksim, *j, LATENCY_MODE), jobs))


def saturation(booksim: Path, workers: int, patterns: list[str]) -> list[Point]:
    jobs = [key for key in LADDERS if key[0] in patterns]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda j: point(booksim, *j, 1.0, THROUGHPUT_MODE), jobs))


def mesh_file(width: int, height: int) -> str:
    """An anynet description of a width x height mesh, one node per router."""
    lines = []
    for r in range(width * height):
        x, y = r % width, r // width
        near = [(x + dx, y + dy) for dx, dy in ((-1, 0), (1, 0), (0, -1), (0, 1))]
        links = " ".join(
            f"router {v * width + u}" for u, v in near if 0 <= u < width and 0 <= v < height
        )
        lines.append(f"router {r} node {r} {links}")
    return "\n".join(lines) + "\n"


def booksim_seconds(
    booksim: Path, width: int, height: int, rate: float, flits: int, cycles: int
) -> tuple[float, int, dict[str, float]]:
    """Wall seconds of one BookSim run of uniform traffic on a width x height mesh of the
    reference router, about ``cycles`` cycles long (one warm-up period and three sampling
    periods of a quarter each, the fewest BookSim's convergence test allows, then the
    drain), with the cycles it reports and its statistics. A square mesh uses BookSim's
    mesh with dimension-order routing, any other an anynet file with shortest-path routing
    (BookSim's mesh has one radix for all dimensions)."""
    quarter = cycles // 4
    mode = {"sim_type": "latency", "warmup_periods": 1, "sample_period": quarter}
    mode |= {"max_samples": 4, "latency_thres": 1e9}
    settings = {**ROUTER, **mode, "traffic": "uniform", "packet_size": flits}
    settings |= {"injection_rate": rate, "injection_rate_uses_flits": 1}
    with tempfile.TemporaryDirectory() as scratch:
        if width == height:
            settings |= {"topology": "mesh", "k": width, "n": 2, "routing_function": "dor"}
        else:
            net = Path(scratch) / "mesh.anynet"
            net.write_text(mesh_file(width, height))
            settings |= {"topology": "anynet", "network_file": str(net)}
            settings |= {"routing_function": "min"}
        stats, wall = run_booksim(booksim, settings)
    return wall, int(stats.get("cycles", 0)), stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--booksim", type=Path, required=True, help="a BookSim2 executable")
    parser.add_argument("what", nargs="?", default="all", choices=("curves", "saturation", "all"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "booksim")
    parser.add_argument("--workers", type=int, default=2)
    known = sorted({pattern for pattern, _ in LADDERS})
    parser.add_argument("--patterns", default=",".join(known), help="comma-separated")
    args = parser.parse_args()
    patterns = args.patterns.split(",")
    if args.what in ("curves", "all"):
        write(curves(args.booksim, args.workers, patterns), args.out / "curves.csv")
    if args.what in ("saturation", "all"):
        write(saturation(args.booksim, args.workers, patterns), args.out / "saturation.csv")


if __name__ == "__main__":
    main()
