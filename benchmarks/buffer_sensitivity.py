"""Finite router buffers on the paper's headline scenario: the table of docs/noc.md,
"Sensitivity: finite buffers on the paper's system".

Run: python benchmarks/buffer_sensitivity.py [--vcs 8]

Runs the 8-GPU 1 MB direct All-Gather under UA and NAP+NAR (threadblock count and NAR
granularity chosen as ``nunasim simulate`` chooses them by default) on nextgen-4die
(infinite buffers), nextgen-4die-vc (credit flow control, 48 VCs x 8 flits) and a copy of
nextgen-4die-vc that differs from it in ``virtual_channels`` alone (``--vcs``), and prints
completion, one-way remote-store latency (mean, p99, max) and the stores' mean time in
the source NoC (CU to egress port) and the destination NoC (ingress port to stack), in ns.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

PRESETS = Path(__file__).resolve().parents[1] / "src" / "nunasim" / "hardware" / "presets"


def simulate(preset: str, config: str) -> dict:
    argv = [sys.executable, "-m", "nunasim", "simulate", "--preset", preset, "--config", config]
    argv += ["--size", "1MB", "--gpus", "8", "--json"]
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vcs", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        text = yaml.safe_load((PRESETS / "nextgen-4die-vc.yaml").read_text())
        text["name"] = f"nextgen-4die-{args.vcs}vc"
        text["socket"]["noc"]["router"]["virtual_channels"] = args.vcs
        variant = Path(scratch) / f"nextgen-4die-{args.vcs}vc.yaml"
        variant.write_text(yaml.safe_dump(text, sort_keys=False))
        presets = (
            ("nextgen-4die", "nextgen-4die"),
            ("nextgen-4die-vc (48 VCs)", "nextgen-4die-vc"),
            (f"{args.vcs} VCs", str(variant)),
        )
        head = (
            "preset | config | NAR | completion | store mean | p99 | max | source NoC | dest. NoC"
        )
        print(f"| {head} |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for config in ("UA", "NAP+NAR"):
            for label, preset in presets:
                r = simulate(preset, config)
                lat, parts = r["store_latency_ns"], r["store_breakdown_ns"]
                cells = [r["completion_ns"], lat["mean"], lat["p99"], lat["max"]]
                cells += [parts["src_noc"], parts["dst_noc"]]
                nar = r.get("granularity", r.get("nar_granularity", ""))
                row = f"| {label} | {config} | {nar} | " + " | ".join(f"{c:.1f}" for c in cells)
                print(row + " |", flush=True)


if __name__ == "__main__":
    main()
