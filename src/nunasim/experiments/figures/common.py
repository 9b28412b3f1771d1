"""What every figure shares: how its points run, its result, the paper's claims, and the
reductions its tables are made of (best threadblock count, speedup over a baseline)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import pandas as pd

from nunasim.io.presets import load_yaml

COMPARISON_COLUMNS = ["claim", "paper", "ours", "holds"]


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
    """The claims ``paper.yaml`` lists for ``figure``: id, claim and the paper's value."""
    text = resources.files("nunasim.experiments").joinpath("paper.yaml").read_text()
    claims = load_yaml(text, "builtin:paper.yaml")["claims"][figure]
    return [{key: str(value) for key, value in claim.items()} for claim in claims]


def comparison(figure: str, ours: Mapping[str, tuple[str, bool | None]]) -> pd.DataFrame:
    """The paper's claims for ``figure`` beside ``ours`` (claim id -> what we measured, and
    whether the claim holds; None: not measured by this grid)."""
    rows = []
    for claim in paper_claims(figure):
        measured, holds = ours.get(claim["id"], ("not in this grid", None))
        rows.append(
            {"claim": claim["claim"], "paper": claim["paper"], "ours": measured, "holds": holds}
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
