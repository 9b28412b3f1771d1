"""The paper's numbers, not only its directions: every claim ``paper.yaml`` gives a number
for, as ``nunasim reproduce all`` judges it from the points the package ships (its
tolerance: a speedup's or a ratio's gain within 25 % of the paper's gain, a percent change
within 25 %, a latency within 10 %; ``figures.common.verdict``). Where ours is
outside it the test is an expected failure, strict, with the measured cause, so a change
that brings a claim within its tolerance has to say so here
(``tests/test_paper_claims.py`` asserts the directions)."""

from __future__ import annotations

import pandas as pd
import pytest

from nunasim.cli.main import main
from nunasim.experiments.figures.common import claim_numbers, paper_claims

CONGESTION_TAIL = (
    "the ports' congestion tail is missing: UA's maximum store latency (1,100 ns) is close "
    "to its zero-load worst path (1,113 ns), where the paper's sits 200 ns beyond it"
)
PREFILL_SHARE = (
    "communication is 49 % of UA's prefill step on average here (compute unchanged, the "
    "plan UA's), so even the smaller 1.19x collective speedup cuts more than the paper's: "
    "its -6 % with 1.32x implies about 25 %"
)
NOC_FIXED_PART = (
    "the best transfer's NoC part is two hops (17 ns) and Table 2 gives no fixed cost per "
    "NoC traversal, so the ratio is 54x / 24x; the paper's 3x and 2x imply a large fixed "
    "part, which the whole transfer's ratio (1.84x, 1.36x: within) carries "
    "(docs/reproduction.md, 'Where the magnitudes go')"
)
COMMUNICATION_SHARE = (
    "our large collectives run well below the ports' bandwidth (the busiest mesh link bounds "
    "them: UA's 16-GPU 16.8 MB All-Reduce 17.2 us against the ports' 4.4 us), so "
    "communication is a larger share of each step (docs/llm.md)"
)
MICROBENCHMARK_GAP = (
    "the microbenchmarks' gap: every transfer pays plane, stack and L1 latencies NUNA does "
    "not touch, so Fig. 9's speedups are 1.15-1.49x at 100 kB-1 MB, not 1.5-1.9x"
)
# (figure, claim id) -> why ours is outside the paper's tolerance, as measured.
OUTSIDE = {
    ("fig9", "nap-alone-up-to"): (
        "NAP alone peaks at 1.269x (All-to-All 1 GB on 2 GPUs), a gain of 0.54 of the "
        "paper's; the paper gives Fig. 9 as a picture, not the cell of its 1.5x, so which "
        "of its cases ours misses is not known and the cause not isolated"
    ),
    ("fig9", "nar-alone-up-to"): (
        "UA+NAR peaks at 1.210x (All-Gather 100 MB on 8 GPUs), a gain of 0.60 of the "
        "paper's 35 %: " + MICROBENCHMARK_GAP + " (the cell of the paper's 35 % unknown)"
    ),
    ("fig10", "noc-worst-over-best"): NOC_FIXED_PART,
    ("fig10", "noc-mean-over-best"): NOC_FIXED_PART,
    ("fig12", "decay"): (
        "1.321x at 100 MB keeps 0.93 of the gain up to 1 MB: on 8 GPUs the busiest mesh "
        "link, not the network, bounds the large collectives, and NAP+NAR relieves it "
        "(docs/reproduction.md, Fig. 12; halving the ports' bandwidth restores the decay)"
    ),
    ("fig15", "prefill-communication-share"): COMMUNICATION_SHARE,
    ("fig15", "decode-communication-share"): COMMUNICATION_SHARE,
    ("fig15", "allreduce-collectives"): "1.25x: " + MICROBENCHMARK_GAP,
    ("fig15", "alltoall-collectives"): "1.22x: " + MICROBENCHMARK_GAP,
    ("fig15", "llama70b-prefill"): (
        "+3.4 %: the TP8 step's All-Reduces are 16.8 MB, where UA's times are a staircase "
        "and NAP+NAR gains least (1.01x at 17.8 MB on 8 GPUs; docs/llm.md)"
    ),
    ("fig15", "llama70b-decode"): (
        "+26.3 %: communication is 79 % of UA's TP16 decode step here, so its collectives' "
        "speedup reaches the step more fully than at the paper's share"
    ),
    ("fig12", "small-speedup"): (
        "1.276x at 1 MB, a gain of 0.55 of the paper's 0.5 (1.418x at 100 kB is within): "
        "every transfer pays the plane, stack and L1 latencies NUNA does not touch "
        "(docs/reproduction.md, Fig. 9)"
    ),
    ("fig12", "large-speedup"): (
        "1.32x at 100 MB: beyond 10 MB the mesh saturates before the network "
        "(docs/reproduction.md, Fig. 12)"
    ),
    ("fig10", "ua-max"): CONGESTION_TAIL,
    ("fig10", "nap-nar-max"): CONGESTION_TAIL,
    ("fig10", "max-lower"): CONGESTION_TAIL + " (UA's tail shorter still than NAP+NAR's)",
    ("fig14", "nap-nar-later"): (
        "UA degrades at a 96-edge GEMM, NAP+NAR at 256 (2.67x): the edges are a coarse "
        "grid, and the cause of the earlier UA step is not measured yet"
    ),
    ("fig15", "ttft-mean"): PREFILL_SHARE,
    ("fig15", "ttft-max"): PREFILL_SHARE,
    ("fig15", "tpot-max"): "-20.8 %: decode's collectives gain 1.26x, not 1.56x (below)",
    ("fig15", "prefill-collectives"): (
        "1.19x, a gain of 0.61 of the paper's: 65 % of prefill's communication is 10-100 MB "
        "collectives, where the mesh bounds both configurations and NAP+NAR gains 1.11x "
        "(docs/llm.md)"
    ),
    ("fig15", "decode-collectives"): (
        "1.26x: a direct 100 kB All-Gather's critical path pays about 2.3 us NUNA cannot "
        "touch (plane, stack and L1 for data, acknowledgement and flag), so even a "
        "zero-latency NoC gives at most about 1.53x"
    ),
}
NUMBERED = [(f, c) for f in ("fig9", "fig10", "fig12", "fig14", "fig15") for c in claim_numbers(f)]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[tuple[str, str], pd.Series]:
    out = tmp_path_factory.mktemp("reproduced")
    figures = sorted({figure for figure, _ in NUMBERED})
    argv = ["reproduce", *figures, "--workers", "1", "--out", str(out / "figures")]
    # An empty cache of its own: every point comes from the shipped ones, none is run.
    assert main([*argv, "--cache-dir", str(out / "cache")]) == 0
    assert not (out / "cache").exists() or not any((out / "cache").iterdir())
    found = {}
    for figure in figures:
        table = pd.read_csv(out / "figures" / figure / "paper.csv")
        ids = {c["claim"]: c["id"] for c in paper_claims(figure)}
        for row in table.itertuples(index=False):
            found[(figure, ids[row.claim])] = row
    return found


def _case(figure: str, claim: str):
    cause = OUTSIDE.get((figure, claim))
    marks = [pytest.mark.xfail(strict=True, reason=cause)] if cause else []
    return pytest.param(figure, claim, marks=marks, id=f"{figure}-{claim}")


@pytest.mark.slow
@pytest.mark.parametrize(("figure", "claim"), [_case(f, c) for f, c in NUMBERED])
def test_the_papers_number_holds_within_its_tolerance(verdicts, figure, claim):
    row = verdicts[(figure, claim)]
    assert row.verdict == "holds", f"{row.claim}: paper {row.paper}, ours {row.ours}: {row.verdict}"


def test_every_listed_cause_is_a_claim_with_a_number():
    assert set(OUTSIDE) <= set(NUMBERED)


@pytest.mark.slow
def test_every_numbered_claim_keeps_the_papers_direction(verdicts):
    """Where a number misses, its direction still holds (a latency has none to miss)."""
    wrong = [k for k, row in verdicts.items() if k in NUMBERED and str(row.direction) == "False"]
    assert not wrong
