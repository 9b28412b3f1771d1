"""What every figure shares: how its points run, its result, the paper's claims, and the
reductions its tables are made of (best threadblock count, speedup over a baseline)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import pandas as pd

from nunasim.io.presets import load_yaml

COMPARISON_COLUMNS = ["claim", "paper", "ours", "direction", "magnitude", "holds", "verdict"]


def paper_data() -> dict[str, Any]:
    """``paper.yaml``: the paper's figures and claims, as the package ships them."""
    return dict(load_yaml(_paper_text(), "builtin:paper.yaml"))


@cache
def _paper_text() -> str:
    return resources.files("nunasim.experiments").joinpath("paper.yaml").read_text()


def _rules() -> dict[str, dict[str, Any]]:
    return {kind: dict(rule) for kind, rule in paper_data()["tolerances"].items()}


# How close a claim's number must come to the paper's to hold, by kind, unless the claim
# gives its own (paper.yaml's ``tolerances``), and the kinds judged by their gain (the value
# less 1) rather than their value.
TOLERANCES = {kind: float(rule["within"]) for kind, rule in _rules().items()}
GAIN_KINDS = frozenset(kind for kind, rule in _rules().items() if rule["of"] == "gain")


# What each kind is called in the rule's words.
_KIND_WORDS = {
    "change": "a percent change",
    "share": "a share in percent",
    "decay": "a decay (the fraction of its small sizes' gain a speedup keeps at large ones)",
    "latency": "a latency",
}


def tolerance_text() -> str:
    """The rule ``verdict`` applies, in words, for the reports (from paper.yaml's
    ``tolerances``), with the paper's 1.5x as the example."""
    gains = [kind for kind in TOLERANCES if kind in GAIN_KINDS]
    tolerance = max(TOLERANCES[k] for k in gains)
    low, high = 1 + 0.5 * (1 - tolerance), 1 + 0.5 * (1 + tolerance)
    others = "; ".join(
        f"{_KIND_WORDS.get(kind, kind)} within {100 * TOLERANCES[kind]:g} % of the paper's"
        for kind in TOLERANCES
        if kind not in GAIN_KINDS
    )
    return (
        f"a {' or a '.join(gains)} holds when its gain (the value less 1) is within "
        f"{100 * tolerance:g} % of the paper's gain (the paper's 1.5x holds for {low:g}x to "
        f"{high:g}x); {others}; a range [low, high] when ours is within that of its ends; "
        "and always only in the paper's direction"
    )


# What a figure measured for a claim: the text shown, whether the paper's direction holds
# (None: the claim has none, or it was not measured), and, for a claim with a number, ours
# (several for a claim over several cases, each held to it).
Measured = tuple[str, bool | None] | tuple[str, bool | None, float | tuple[float, ...] | None]


@dataclass(frozen=True)
class FigureRun:
    """A figure's outcome: its table (what the picture draws), the paper's claims with ours,
    and any per-store tables the picture needs (Fig. 10's histograms)."""

    name: str
    title: str
    quick: bool
    table: pd.DataFrame
    comparison: pd.DataFrame
    stores: dict[str, pd.DataFrame] = field(default_factory=dict)


def paper_claims(figure: str) -> list[dict[str, str]]:
    """The claims ``paper.yaml`` lists for ``figure``: id, claim and the paper's value, as
    text (``claim_numbers`` has their numbers)."""
    return [{k: str(claim[k]) for k in ("id", "claim", "paper")} for claim in _raw(figure)]


def _raw(figure: str) -> list[dict[str, Any]]:
    return list(paper_data()["claims"][figure])


def claims_with(figure: str, field: str) -> dict[str, Any]:
    """The claims of ``figure`` that name ``field`` (what a figure reads them from, such
    as a collective kind or a step): id -> its value."""
    return {claim["id"]: claim[field] for claim in _raw(figure) if field in claim}


def claim_numbers(figure: str) -> dict[str, tuple[tuple[float, float], str, float]]:
    """The claims of ``figure`` that carry a number: id -> (the paper's range, a single
    value twice; its kind; the tolerance it is held to). A decay's range is the fraction of
    its small sizes' gain its large size keeps (the paper's 1.5-1.9x to 1.1x: 0.1/0.9 to
    0.1/0.5)."""
    numbers = {}
    for claim in _raw(figure):
        if "value" not in claim:
            continue
        value, kind = claim["value"], claim["kind"]
        if kind == "decay":
            small = value["small"] if isinstance(value["small"], list) else [value["small"]] * 2
            kept = float(value["large"]) - 1
            value = [kept / (float(small[1]) - 1), kept / (float(small[0]) - 1)]
        low, high = (value, value) if not isinstance(value, list) else value
        numbers[claim["id"]] = (
            (float(low), float(high)),
            kind,
            float(claim.get("tolerance", TOLERANCES[kind])),
        )
    return numbers


def judged(kind: str, value: float) -> float:
    """What a claim of ``kind`` is judged by: a speedup's or a ratio's gain, else itself."""
    return value - 1 if kind in GAIN_KINDS else value


def holding_band(number: tuple[tuple[float, float], str, float]) -> tuple[float, float]:
    """The judged values (``judged``) that hold for a claim's number: from its low end's
    less its tolerance to its high end's plus it, each a fraction of that end's own size."""
    (low, high), kind, tolerance = number
    a, b = judged(kind, low), judged(kind, high)
    return a - tolerance * abs(a), b + tolerance * abs(b)


def verdict(
    direction: bool | None,
    value: float | tuple[float, ...] | None,
    number: tuple[tuple[float, float], str, float] | None,
) -> tuple[float, bool | None, str]:
    """A claim's magnitude (ours over the paper's, gains for a speedup or a ratio; NaN
    without numbers), whether it holds and the verdict: ``holds`` (its direction, and its
    number within the tolerance), ``direction only`` (with the magnitude), ``no``, or ``not
    measured``."""
    if number is None or value is None:
        if direction is None:
            return float("nan"), None, "not measured"
        return float("nan"), direction, "holds" if direction else "no"
    (low, high), kind, _ = number
    lowest, highest = holding_band(number)
    values = [judged(kind, v) for v in (value if isinstance(value, tuple) else (value,))]
    within = all(lowest <= v <= highest for v in values)
    ends = judged(kind, low), judged(kind, high)

    def nearest(v: float) -> float:
        return ends[0] if v < ends[0] else ends[1]

    # The case furthest from the paper's range gives the magnitude.
    worst = max(values, key=lambda v: abs(v / nearest(v) - 1) if nearest(v) else abs(v))
    magnitude = worst / nearest(worst) if nearest(worst) else float("nan")
    of = "the paper's gain" if kind in GAIN_KINDS else "the paper's"
    if within and direction is not False:
        return magnitude, True, "holds"
    if direction:
        return magnitude, False, f"direction only ({magnitude:.2f}x {of})"
    return magnitude, False, f"no ({magnitude:.2f}x {of})" if direction is None else "no"


def comparison(figure: str, ours: Mapping[str, Measured]) -> pd.DataFrame:
    """The paper's claims for ``figure`` beside ``ours`` (claim id -> what we measured:
    ``Measured``), each with its verdict."""
    numbers = claim_numbers(figure)
    rows = []
    for claim in paper_claims(figure):
        measured = ours.get(claim["id"])
        if measured is None:
            text, direction = "not in this grid", None
            magnitude, holds, said = float("nan"), None, "not measured"
        else:
            text, direction = measured[0], measured[1]
            value = measured[2] if len(measured) > 2 else None
            magnitude, holds, said = verdict(direction, value, numbers.get(claim["id"]))
        rows.append(
            {
                "claim": claim["claim"],
                "paper": claim["paper"],
                "ours": text,
                "direction": direction,
                "magnitude": magnitude,
                "holds": holds,
                "verdict": said,
            }
        )
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def best_per_case(runs: pd.DataFrame, case: list[str]) -> pd.DataFrame:
    """The fastest run of each ``case`` (a threadblock search over the runs' counts; the
    first of equals), in the order the cases first appear."""
    order = runs.reset_index(drop=True)
    fastest = order.loc[order.groupby(case, sort=False)["completion_ps"].idxmin()]
    return fastest.sort_index().reset_index(drop=True)


def with_speedup(table: pd.DataFrame, case: list[str], baseline: Mapping[str, Any]) -> pd.DataFrame:
    """``table`` with ``speedup``: the completion time of the row of its case matching
    ``baseline`` (column -> value) over its own."""
    chosen = table
    for column, value in baseline.items():
        chosen = chosen[chosen[column] == value]
    base = chosen.set_index(case)["completion_ps"]
    wanted = pd.MultiIndex.from_frame(table[case]) if len(case) > 1 else pd.Index(table[case[0]])
    out = table.copy()
    out["speedup"] = base.reindex(wanted).to_numpy() / table["completion_ps"].to_numpy()
    return out


def ratio_text(value: float) -> str:
    return f"{value:.3f}x"


def numbered_tally(figure: str, claims: pd.DataFrame) -> tuple[int, int]:
    """Of ``figure``'s claims as a run judged them (its ``paper.csv``: claim and verdict),
    how many of those paper.yaml gives a number hold in magnitude, and how many there are
    (a claim the run did not list counts, unheld: a number not measured does not hold)."""
    if figure not in paper_data()["claims"]:
        return 0, 0
    numbered = claim_numbers(figure)
    texts = {claim["claim"] for claim in paper_claims(figure) if claim["id"] in numbered}
    verdicts = dict(zip(claims["claim"], claims["verdict"], strict=True))
    holding = sum(verdicts.get(text) == "holds" for text in texts)
    return holding, len(texts)
