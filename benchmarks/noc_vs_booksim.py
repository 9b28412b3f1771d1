"""nunasim's router model against BookSim2's on the mesh8x8-vc reference router.

Run: python benchmarks/noc_vs_booksim.py [--booksim-dir benchmarks/booksim] [--plots docs]
     [--preset mesh8x8-vc] [--warmup 10000] [--cycles 30000] [--workers 2]

Reads BookSim's curves and saturation throughputs from ``--booksim-dir`` (written by
``booksim_reference.py``), runs ``nunasim noc`` at the same offered loads, patterns
(self-traffic included, as BookSim draws it; hotspot: every packet to the four central
routers) and packet lengths, and prints, per curve:

- the mean-latency error at every load up to 70% of BookSim's saturation load (where its
  latency reaches twice its zero-load value, interpolated), and the largest of them;
- both saturation loads, and both saturation throughputs (flits ejected per node per
  cycle at an offered load of 1.0: BookSim's throughput mode against a nunasim window
  with a drain limit);

and writes ``nunasim.csv`` beside BookSim's tables and one plot per pattern with both
simulators' curves, ``noc-booksim-<pattern>.png`` in ``--plots``.
"""

from __future__ import annotations

import argparse
import csv
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from booksim_reference import HOTSPOTS

from nunasim.engine.noc.run import Pattern, run_noc
from nunasim.engine.noc.saturation import saturation
from nunasim.io.presets import load_preset

HERE = Path(__file__).parent
LOAD_SHARE = 0.7  # latencies are compared up to this share of BookSim's saturation load
OVERLOAD = 1.0
DRAIN = 20_000  # cycles an overload run may drain


def read(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def pattern_of(name: str) -> Pattern:
    """BookSim's pattern of that name: self-traffic on; hotspot sends every packet to the
    four central routers (a hotspot source to the other three: nunasim never sends a
    hotspot packet to its own source)."""
    if name == "hotspot":
        spots = tuple((router, 1.0) for router in HOTSPOTS)
        return Pattern(name, hotspot_fraction=1.0, hotspots=spots, self_traffic=True)
    return Pattern(name, self_traffic=True)


def ours(job: tuple[str, str, int, float, int, int]) -> dict[str, object]:
    preset, pattern, flits, rate, warmup, cycles = job
    socket = load_preset(preset).socket
    drain = DRAIN if rate >= OVERLOAD else None
    run = run_noc(socket, pattern_of(pattern), rate, flits, cycles, warmup, drain=drain)
    r = run.result()
    return {
        "pattern": pattern,
        "packet_flits": flits,
        "offered": rate,
        "stable": not r.saturated,
        "latency": r.avg_latency_cycles,
        "accepted": r.accepted_flits_per_node_cycle,
        "ejected": r.ejected_flits_per_node_cycle,
        "zero_load": r.pattern_zero_load_cycles,
    }


def marks(rows: list[dict], zero_load: float) -> tuple[float | None, float | None]:
    offered = np.array([float(r["offered"]) for r in rows])
    latency = np.array(
        [float(r["latency"]) if r["latency"] not in ("", None) else np.nan for r in rows]
    )
    stable = np.array([r["stable"] in (True, "True") for r in rows])
    accepted = np.array(
        [float(r["accepted"]) if r["accepted"] not in ("", None) else np.nan for r in rows]
    )
    mark = saturation(offered, accepted, latency, zero_load, ~stable)
    return mark.load, mark.load_high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--booksim-dir", type=Path, default=HERE / "booksim")
    parser.add_argument("--plots", type=Path, default=HERE.parent / "docs")
    parser.add_argument("--preset", default="mesh8x8-vc")
    parser.add_argument("--warmup", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, default=30_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    reference = read(args.booksim_dir / "curves.csv")
    thru = {
        (r["pattern"], int(r["packet_flits"])): float(r["accepted"])
        for r in read(args.booksim_dir / "saturation.csv")
    }
    jobs = [
        (
            args.preset,
            r["pattern"],
            int(r["packet_flits"]),
            float(r["offered"]),
            args.warmup,
            args.cycles,
        )
        for r in reference
    ]
    jobs += [(args.preset, p, f, OVERLOAD, args.warmup, args.cycles) for p, f in thru]
    with ProcessPoolExecutor(args.workers) as pool:
        mine = list(pool.map(ours, jobs))
    out = args.booksim_dir / "nunasim.csv"
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(mine[0]))
        writer.writeheader()
        writer.writerows(mine)
    print(f"wrote {out}")
    curves = sorted({(r["pattern"], int(r["packet_flits"])) for r in reference})
    for pattern, flits in curves:
        theirs = [
            r for r in reference if (r["pattern"], int(r["packet_flits"])) == (pattern, flits)
        ]
        mine_c = [
            r
            for r in mine
            if (r["pattern"], r["packet_flits"]) == (pattern, flits) and r["offered"] < OVERLOAD
        ]
        zero = float(mine_c[0]["zero_load"])
        b_load, b_high = marks(theirs, zero)
        n_load, n_high = marks(mine_c, zero)
        print(f"\n{pattern}, {flits}-flit packets (zero-load {zero:.2f} cycles)")
        print("offered  booksim  nunasim  error")
        worst = 0.0
        for t, m in zip(theirs, mine_c, strict=True):
            rate = float(t["offered"])
            lat_b = float(t["latency"]) if t["latency"] else float("nan")
            lat_n = float(m["latency"]) if m["stable"] else float("nan")
            err = (lat_n - lat_b) / lat_b if lat_b == lat_b else float("nan")
            inside = b_load is not None and rate <= LOAD_SHARE * b_load
            if inside:
                worst = max(worst, abs(err)) if err == err else float("inf")
            print(
                f"{rate:7.3f}  {lat_b:7.2f}  {lat_n:7.2f}  {err:+6.1%}"
                + ("" if inside else "  (past 70%)")
            )
        over = next(
            r
            for r in mine
            if (r["pattern"], r["packet_flits"], r["offered"]) == (pattern, flits, OVERLOAD)
        )
        print(
            f"largest latency error up to {LOAD_SHARE:.0%} of BookSim's saturation load: "
            f"{worst:.1%}"
        )
        print(f"saturation load: booksim {b_load} (..{b_high}), nunasim {n_load} (..{n_high})")
        tb, tn = thru[(pattern, flits)], float(over["ejected"])
        print(f"saturation throughput: booksim {tb:.4f}, nunasim {tn:.4f} ({(tn - tb) / tb:+.1%})")
    plot(reference, mine, thru, args.plots)


def plot(reference: list[dict], mine: list[dict], thru: dict, folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for pattern in sorted({r["pattern"] for r in reference}):
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for flits, colour in ((1, "tab:blue"), (4, "tab:red")):
            theirs = [
                r
                for r in reference
                if r["pattern"] == pattern and int(r["packet_flits"]) == flits and r["latency"]
            ]
            mine_c = [
                r
                for r in mine
                if r["pattern"] == pattern
                and r["packet_flits"] == flits
                and r["stable"]
                and r["offered"] < OVERLOAD
            ]
            ax.plot(
                [float(r["offered"]) for r in theirs],
                [float(r["latency"]) for r in theirs],
                "o-",
                color=colour,
                label=f"BookSim2, {flits}-flit",
            )
            ax.plot(
                [r["offered"] for r in mine_c],
                [r["latency"] for r in mine_c],
                "s--",
                color=colour,
                mfc="none",
                label=f"nunasim, {flits}-flit",
            )
            ax.axvline(thru[(pattern, flits)], color=colour, lw=0.8, ls=":")
        ax.set_xlabel("offered load (flits/node/cycle)")
        ax.set_ylabel("mean packet latency (cycles)")
        ax.set_title(
            f"mesh8x8-vc, {pattern} traffic (dotted: BookSim2 saturation throughput)", fontsize=9
        )
        ax.set_ylim(0, 150)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = folder / f"noc-booksim-{pattern}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
