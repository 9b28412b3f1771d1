"""Which of the paper's unstated assumptions moves which claim: one preset parameter
changed at a time from the literal `nextgen-4die`, each claim measured again.

    python benchmarks/sensitivity.py [--only hop-latency,window] [--out sensitivity.csv]

Claims (the paper's number in brackets): Fig. 10's mean and maximum one-way store latency
under UA and NAP+NAR at their best threadblock counts (920, 1,320, 780, 1,180 ns); the
NAP+NAR speedup of the 8-GPU All-Gather at 100 kB and 1 MB (1.5-1.9x); section 1's
zero-load ratios over every (CU router, port, stack) of a remote store: the whole transfer's
worst and average over its best (1.8x, 1.45x), and its NoC part's (3x, 2x), for Fig. 1's
transfer: a local read, then a remote store. Prints the
matrix (assumption x claim) as Markdown, each value with its ratio to the literal preset's.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from nunasim.experiments.figures.common import claim_numbers
from nunasim.experiments.headline import paper_fig10_ns, run_headline
from nunasim.experiments.tbsearch import best_threadblocks
from nunasim.hardware.summary import transfer_spread
from nunasim.io.presets import load_preset

BASE = "nextgen-4die"
PRESETS = Path(__file__).resolve().parent.parent / "src" / "nunasim" / "hardware" / "presets"
# (name, what changes, the preset keys under socket.noc / socket.compute / ... it sets)
VARIANTS = {
    "literal": ("Table 2 as written", {}),
    "hop-latency": ("15 cycles a hop instead of 10", {("noc", "cycles_per_hop"): 15}),
    "die-crossing": ("20 cycles more on a die-to-die link", {("noc", "die_crossing_cycles"): 20}),
    "bisection": ("10 TB/s bisection per direction", {("noc", "bisection_bandwidth"): "20TB/s"}),
    "window": ("a CU's window 350 requests", {("compute", "outstanding_requests"): 350}),
    "interleave": ("UA's pages die-first", {("memory", "interleave"): "die-first"}),
    "port-hash": ("UA's port hash a rotation", {("port_hash",): "rotation"}),
}


def paper_numbers() -> dict[str, float]:
    """The paper's figure for each claim, printed beside nunasim's (nothing is computed
    from them), from the package's ``paper.yaml``: Fig. 10 (section 6.2), the low end of
    Fig. 12's 1.5-1.9x for both sizes, and section 1's ratios (judged under Fig. 10)."""
    fig10 = paper_fig10_ns()
    (speedup, _), _, _ = claim_numbers("fig12")["small-speedup"]
    ratios = {claim: low for claim, ((low, _), _, _) in claim_numbers("fig10").items()}
    return {
        "UA mean ns": fig10["UA"][0],
        "UA max ns": fig10["UA"][1],
        "NAP+NAR mean ns": fig10["NAP+NAR"][0],
        "NAP+NAR max ns": fig10["NAP+NAR"][1],
        "speedup 100 kB": speedup,
        "speedup 1 MB": speedup,
        "transfer worst/best": ratios["transfer-worst-over-best"],
        "transfer mean/best": ratios["transfer-mean-over-best"],
        "NoC worst/best": ratios["noc-worst-over-best"],
        "NoC mean/best": ratios["noc-mean-over-best"],
    }


def variant_preset(changes: dict, folder: Path):
    data = yaml.safe_load((PRESETS / f"{BASE}.yaml").read_text())
    for keys, value in changes.items():
        node = data["socket"]
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    data["name"] = f"{BASE}-variant"
    path = folder / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_preset(str(path))


def measure(preset) -> dict[str, float]:
    outcome = run_headline(preset, "allgather:direct:gpus=8", 1_000_000)
    rows = outcome.table.set_index("config")
    found = {
        "UA mean ns": rows.loc["UA", "store_mean_ns"],
        "UA max ns": rows.loc["UA", "store_max_ns"],
        "NAP+NAR mean ns": rows.loc["NAP+NAR", "store_mean_ns"],
        "NAP+NAR max ns": rows.loc["NAP+NAR", "store_max_ns"],
        "speedup 1 MB": rows.loc["UA", "completion_ns"] / rows.loc["NAP+NAR", "completion_ns"],
    }
    pod = preset.fit(8).pod
    small = {
        c: best_threadblocks(pod, "allgather", 100_000, c, gpus=8).result.completion_ps
        for c in ("UA", "NAP+NAR")
    }
    found["speedup 100 kB"] = small["UA"] / small["NAP+NAR"]
    return {**found, **transfer_spread(preset).ratios()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated variants (default: all)")
    parser.add_argument("--out", help="CSV of the matrix")
    args = parser.parse_args()
    names = list(VARIANTS) if not args.only else ["literal", *args.only.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in dict.fromkeys(names):
            what, changes = VARIANTS[name]
            started = time.process_time()
            preset = variant_preset(changes, Path(folder)) if changes else load_preset(BASE)
            found = measure(preset)
            rows.append({"assumption": name, "change": what, **found})
            print(f"{name}: {time.process_time() - started:.0f} s of CPU", flush=True)
    table = pd.DataFrame(rows).set_index("assumption")
    literal = table.loc["literal"]
    paper = paper_numbers()
    claims = list(paper)
    print("\n| assumption | change | " + " | ".join(claims) + " |")
    print("|---|---|" + "---|" * len(claims))
    print("| paper | |" + "".join(f" {paper[c]:g} |" for c in claims))
    for name, row in table.iterrows():
        cells = []
        for claim in claims:
            value = float(row[claim])
            shown = f"{value:,.0f}" if claim.endswith("ns") else f"{value:.2f}x"
            moved = value / float(literal[claim])
            cells.append(shown if name == "literal" else f"{shown} ({moved:.2f})")
        print(f"| {name} | {row['change']} | " + " | ".join(cells) + " |")
    if args.out:
        table.to_csv(args.out)


if __name__ == "__main__":
    main()
