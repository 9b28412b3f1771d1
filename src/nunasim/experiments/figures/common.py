"""What every figure shares: how its points run, its result, the paper's claims, and the
reductions its tables are made of (best threadblock count, speedup over a baseline)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import pandas as pd

from nunasim.io.presets import load_yaml

COMPARISON_COLUMNS = ["claim", "paper", "ours", "direction", "magnitude", "holds", "verdict"]
# How close a claim's number must come to the paper's to hold, unless paper.yaml gives a
# tolerance: a speedup or another ratio within 15 % of the paper's, a latency within 10 %,
# a change in percent within 15 % of the paper's change.
TOLERANCES = {"speedup": 0.15, "ratio": 0.15, "latency": 0.10, "change": 0.15}

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


def paper_data() -> dict[str, Any]:
    """``paper.yaml``: the paper's figures and claims, as the package ships them."""
    text = resources.files("nunasim.experiments").joinpath("paper.yaml").read_text()
    return dict(load_yaml(text, "builtin:paper.yaml"))


def _raw(figure: str) -> list[dict[str, Any]]:
    return list(paper_data()["claims"][figure])


def claim_numbers(figure: str) -> dict[str, tuple[tuple[float, float], str, float]]:
    """The claims of ``figure`` that carry a number: id -> (the paper's range, a single
    value twice; its kind; the tolerance it is held to)."""
    numbers = {}
    for claim in _raw(figure):
        if "value" not in claim:
            continue
        value = claim["value"]
        low, high = (value, value) if not isinstance(value, list) else value
        kind = claim["kind"]
        numbers[claim["id"]] = (
            (float(low), float(high)),
            kind,
            claim.get("tolerance", TOLERANCES[kind]),
        )
    return numbers


def verdict(
    direction: bool | None,
    value: float | tuple[float, ...] | None,
    number: tuple[tuple[float, float], str, float] | None,
) -> tuple[float, bool | None, str]:
    """A claim's magnitude (ours over the paper's; NaN without numbers), whether it holds
    and the verdict: ``holds`` (its direction, and its number within the tolerance),
    ``direction only`` (with the magnitude), ``no``, or ``not measured``."""
    if number is None or value is None:
        if direction is None:
            return float("nan"), None, "not measured"
        return float("nan"), direction, "holds" if direction else "no"
    (low, high), kind, tolerance = number
    values = value if isinstance(value, tuple) else (value,)
    if kind == "change":  # percent changes: within the tolerance of the paper's change
        within = all(
            low - tolerance * abs(low) <= v <= high + tolerance * abs(high) for v in values
        )
    else:
        within = all(low * (1 - tolerance) <= v <= high * (1 + tolerance) for v in values)
    # The case furthest from the paper's range gives the magnitude.
    worst = max(values, key=lambda v: abs(v / (low if v < low else high) - 1))
    magnitude = worst / (low if worst < low else high) if (low or high) else float("nan")
    if within and direction is not False:
        return magnitude, True, "holds"
    if direction:
        return magnitude, False, f"direction only ({magnitude:.2f}x the paper's)"
    return magnitude, False, f"no ({magnitude:.2f}x the paper's)" if direction is None else "no"


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
