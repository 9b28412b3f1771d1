"""NAP+NAR against UA on plan files, with the granularity the placement policy's estimate
picks (what ``simulate --plan`` ran before its granularity was searched) and the one the
search by simulation picks (what it runs now): the table of docs/plans.md.

    python benchmarks/plan_granularities.py [PLAN ...] [--size 1MB] [--threads 2]

Without plans, every fixture plan under tests/fixtures/plans. Each plan runs at its own
GPUs and threadblocks (seed 0, the engine ``auto`` picks) as ``nunasim simulate --plan
PLAN`` runs it: UA once, NAP+NAR at every granularity ``auto`` may use. "before" is the
search's run at the estimate's pick (the same placement and run the estimate alone gave);
"cause" is ``plan_search.loss_cause``, where UA is still faster.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import nunasim as ns
from nunasim.experiments.plan_search import plan_report
from nunasim.experiments.sweep import Point, point_search, run_point
from nunasim.units import PS_PER_NS, parse_size

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "plans"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plans", nargs="*", type=Path)
    parser.add_argument("--size", default="1MB")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--preset", default="nextgen-4die")
    args = parser.parse_args()
    plans = args.plans or sorted(p for p in FIXTURES.iterdir() if p.suffix in (".xml", ".json"))
    preset = ns.load_preset(args.preset)
    header = [
        "plan",
        "GPUs",
        "UA ns",
        "NAP+NAR ns before (g)",
        "after (g)",
        "runner-up (g)",
        "speedup over UA before, after",
        "cause if still slower",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for path in plans:
        started = time.perf_counter()
        point = Point(str(path), parse_size(args.size), ns.Configuration.parse("NAP+NAR"))
        result = run_point(point, preset, threads=args.threads)
        best = point_search(point, preset)
        assert best is not None, f"{path}: NAP+NAR's granularity was not searched"
        report = plan_report(point, preset, best, result)
        search = report.search
        ua = report.reference.completion_ps
        before = search.completions[search.estimated]  # type: ignore[index]
        second = search.runner_up
        cells = [
            path.name,
            str(result.info.gpus if result.info else "?"),
            f"{ua / PS_PER_NS:,.0f}",
            f"{before / PS_PER_NS:,.0f} ({search.estimated})",
            f"{result.completion_ps / PS_PER_NS:,.0f} ({search.winner})",
            "-" if second is None else f"{search.completions[second] / PS_PER_NS:,.0f} ({second})",
            f"{ua / before:.3f}, {report.speedup:.3f}",
            report.cause.describe() if report.cause else "",
        ]
        print("| " + " | ".join(cells) + " |", flush=True)
        print(f"<!-- {time.perf_counter() - started:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
