"""One max-min fairness computation of a large flow run, timed on its own.

    python benchmarks/fairness_computation.py [--case a2a64-10m-1008-nap] [--repeat 5]

Prepares a case of ``flow_loop.py`` (placed, its demands counted, its distinct columns
kept), makes every other flow active and times ``max_min_rates`` on them, best of
``--repeat`` (wall seconds; the machine is shared), beside the same computation with the
resources renumbered at random, which shows whether the resources' rows are what it
waits for. Prints a digest of the rates: equal digests, equal rates bit for bit.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np
from flow_loop import CASES, prepare  # beside this script, on its path

from nunasim.engine.flow.fairness import crossings, max_min_rates


def best_computation(active, start, res, coef, nres, repeat):  # type: ignore[no-untyped-def]
    crossed = crossings(start, res, nres)
    nflows = len(start) - 1
    position, rate = np.zeros(nflows, dtype=np.int64), np.zeros(nflows)
    bound = np.full(nflows, -1, dtype=np.int64)
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        max_min_rates(active, len(active), start, res, coef, *crossed, position, rate, bound)
        best = min(best, time.perf_counter() - started)
    return best, hashlib.sha256(rate.tobytes()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="a2a64-10m-1008-nap", choices=sorted(CASES))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    _, loads, _ = prepare(args.case).arguments
    start, res, coef, nres = loads.entry_start, loads.entry_res, loads.entry_coef, loads.nres
    active = np.arange(0, len(start) - 1, 2, dtype=np.int64)
    pairs = int((start[active + 1] - start[active]).sum())
    as_is, digest = best_computation(active, start, res, coef, nres, args.repeat)
    shuffled = np.random.default_rng(0).permutation(nres)[res]
    renumbered, _ = best_computation(active, start, shuffled, coef, nres, args.repeat)
    print(
        f"{args.case}: {len(active):,} active flows, {pairs:,} pairs, {nres:,} resources: "
        f"{1e3 * as_is:.1f} ms (rates {digest}); resources renumbered at random "
        f"{1e3 * renumbered:.1f} ms"
    )


if __name__ == "__main__":
    main()
