"""Which of nunasim's own helpers the packet core's compiled loop still calls out of line.

Run: python benchmarks/loop_calls.py
A helper marked ``jit(inline="llvm")`` is compiled once and left to LLVM's inliner, which
may decline: the event heap's sift-down was such a call, one per event, with some twenty
arguments pushed (the arrays' fields), until it was inlined by numba
(docs/engine-measured.md, "The heap's sift-down, inlined"). numba shows no machine code of a
function loaded from its cache, so this compiles the loop afresh into a temporary cache
(about 13 s), runs a small NoC run to compile it, and lists every function of nunasim's
that the loop's machine code takes the address of to call it. Exit status 1 if there is any.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections import Counter


def out_of_line_calls() -> Counter[str]:
    from nunasim.engine.noc.run import run_noc
    from nunasim.engine.packet import core
    from nunasim.io.presets import load_preset

    run_noc(load_preset("mesh8x8-vc").socket, "uniform", 0.2, 1, cycles=200, warmup=40)
    asm = core._loop.inspect_asm(core._loop.signatures[0])
    calls: Counter[str] = Counter()
    for line in asm.splitlines():
        # a call to a compiled function: its address loaded, then ``call *%reg``
        found = re.match(r"\s*movabsq\s+\$(_ZN7nunasim\w*?)(?:B\d|,)", line)
        if found and "4core5_loop" not in found.group(1):
            calls[found.group(1)] += 1
    return calls


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache  # read when numba is first imported
        calls = out_of_line_calls()
    if not calls:
        print("the packet core's loop calls none of nunasim's helpers out of line")
        return
    for name, count in calls.most_common():
        print(f"{count:4d}  {name}")
    sys.exit(1)


if __name__ == "__main__":
    main()
