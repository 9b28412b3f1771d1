"""Fitting the readings Table 2 leaves open to a chosen set of the paper's claims.

``calibration.yaml`` declares each open reading (the preset key it sets, its range and the
source of the range, the paper's words it reads) and the claims a fit may use. A fit moves
only those readings, within their ranges, on top of a base preset whose stated numbers it
never touches, with SciPy's differential evolution: the objective is a few packet runs and
zero-load sums, not smooth (cycles are integers, queues jump) and has no gradient, and the
readings are few (two to four), where a seeded population search over the box is both
robust and reproducible; a Bayesian optimiser would save runs but add a dependency for a
fit that takes minutes.

Each claim's residual is in units of its tolerance (|r| <= 1 holds): a ratio or speedup by
its gain (value - 1) against the paper's gain, a latency by its value. The objective is the
mean squared residual over the training claims. Fig. 10's runs are held at the base
preset's best threadblock counts during the fit (a search per evaluation would cost ten
times more); the report measures the fitted preset's claims again with the full search.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from nunasim.errors import ConfigError
from nunasim.experiments.figures.common import (
    claim_numbers,
    holding_band,
    judged,
    paper_data,
    tolerance_text,
)
from nunasim.experiments.headline import run_headline
from nunasim.experiments.tbsearch import best_threadblocks
from nunasim.hardware import Preset
from nunasim.hardware.summary import transfer_spread
from nunasim.io.presets import load_preset, load_yaml, parse_preset
from nunasim.units import parse_size, ps_to_ns

HEADLINE_PLAN = "allgather:direct:gpus=8"
HEADLINE_SIZE = parse_size("1MB")
SMALL_SIZE = parse_size("100kB")


@dataclass(frozen=True)
class Reading:
    """An open reading: the preset key it sets and the range a fit may take it over."""

    name: str
    key: tuple[str, ...]  # under ``socket``
    unit: str  # "cycles", "GB/s" or "TB/s"
    low: float
    high: float
    literal: float
    choices: tuple[float, ...] | None  # a reading with a few discrete values
    reads: str
    source: str

    def preset_value(self, value: float) -> Any:
        """``value`` as the preset file writes it (``snapped``, with its unit)."""
        held = self.snapped(value)
        return round(held) if self.unit == "cycles" else f"{held:.6g}{self.unit}"

    def snapped(self, value: float) -> float:
        """``value`` as the preset will hold it (whole cycles, a listed choice)."""
        if self.unit == "cycles":
            return float(round(value))
        if self.choices:
            return float(min(self.choices, key=lambda c: abs(c - value)))
        return float(f"{value:.6g}")


@dataclass(frozen=True)
class Claim:
    name: str
    paper: tuple[float, float]  # a single number twice
    kind: str  # "ratio", "speedup" or "latency"
    says: str
    tolerance: float

    def residual(self, value: float) -> float:
        """How far ``value`` is from the paper's, in units of the tolerance: 0 inside the
        paper's range, at most 1 in magnitude where the claim holds (the band of
        ``holding_band``, which the figures' verdicts use too)."""
        judged_value = judged(self.kind, value)
        low, high = (judged(self.kind, p) for p in self.paper)
        if low <= judged_value <= high:
            return 0.0
        band_low, band_high = holding_band((self.paper, self.kind, self.tolerance))
        if judged_value < low:
            return (judged_value - low) / (low - band_low)
        return (judged_value - high) / (band_high - high)


@dataclass(frozen=True)
class Calibration:
    """What ``calibration.yaml`` declares."""

    base: str  # the preset a fit moves the readings of
    literal: str  # the literal preset, whose claims the report shows beside the fit's
    readings: dict[str, Reading]
    claims: dict[str, Claim]
    train: tuple[str, ...]


def load_calibration(path: str | Path | None = None) -> Calibration:
    """The shipped ``calibration.yaml``, or a file of the same form."""
    if path is None:
        text = resources.files("nunasim.experiments").joinpath("calibration.yaml").read_text()
        source = "builtin:calibration.yaml"
    else:
        text, source = Path(path).read_text(encoding="utf-8"), str(path)
    data = load_yaml(text, source)
    readings = {}
    for name, r in data["readings"].items():
        low, high = (float(v) for v in r["range"])
        readings[name] = Reading(
            name,
            tuple(r["key"]),
            r["unit"],
            low,
            high,
            float(r["literal"]),
            tuple(float(c) for c in r["choices"]) if "choices" in r else None,
            " ".join(str(r["reads"]).split()),
            " ".join(str(r["source"]).split()),
        )
    claims = {}
    for name, c in data["claims"].items():
        figure, _, claim_id = str(c["of"]).partition("/")
        numbered = claim_numbers(figure) if figure in paper_data()["claims"] else {}
        if claim_id not in numbered:
            raise ConfigError(
                f"claims.{name}: {c['of']} is not a numbered claim of paper.yaml", source=source
            )
        paper, kind, tolerance = numbered[claim_id]
        claims[name] = Claim(name, paper, kind, c["says"], tolerance)
    train = tuple(data["train"])
    unknown = [c for c in train if c not in claims]
    if unknown:
        raise ConfigError(f"train names unknown claims: {', '.join(unknown)}", source=source)
    return Calibration(data["base"], data["literal"], readings, claims, train)


def base_document(base: str) -> dict[str, Any]:
    """The base preset's file as data, so that a fit writes a preset of the same form."""
    folder = resources.files("nunasim.hardware").joinpath("presets")
    text = folder.joinpath(f"{base}.yaml").read_text(encoding="utf-8")
    return dict(load_yaml(text, f"builtin:{base}"))


def with_readings(
    document: Mapping[str, Any], readings: Mapping[Reading, float], name: str
) -> dict[str, Any]:
    """The preset document ``document`` with each reading set, named ``name``."""
    data = yaml.safe_load(yaml.safe_dump(dict(document)))  # a deep copy of plain data
    for reading, value in readings.items():
        node = data["socket"]
        for key in reading.key[:-1]:
            node = node[key]
        node[reading.key[-1]] = reading.preset_value(value)
    data["name"] = name
    return data


def preset_of(document: Mapping[str, Any]) -> Preset:
    return parse_preset(yaml.safe_dump(dict(document), sort_keys=False), str(document["name"]))


# --- the cheap claims ----------------------------------------------------------------------


def zero_load_claims(preset: Preset) -> dict[str, float]:
    """Section 1's ratios over every transfer of Fig. 1 (``transfer_spread``) and section
    3.1.3's NoC time of a remote write at its worst, read as the store's own mesh paths
    (CU to port, port to remote stack), in ns."""
    spread = transfer_spread(preset)
    ratios = spread.ratios()
    return {
        "s1-transfer-worst": ratios["transfer worst/best"],
        "s1-transfer-mean": ratios["transfer mean/best"],
        "s1-noc-worst": ratios["NoC worst/best"],
        "s1-noc-mean": ratios["NoC mean/best"],
        "s313-noc-max": ps_to_ns(spread.store_noc_worst_ps),
    }


def headline_counts(preset: Preset, search: str = "staged") -> dict[str, int]:
    """UA's and NAP+NAR's best threadblock counts for Fig. 10's run on ``preset``, found by
    ``search`` (``tbsearch.SEARCHES``)."""
    pod = preset.fit(8).pod
    return {
        config: best_threadblocks(
            pod, "allgather", HEADLINE_SIZE, config, gpus=8, search=search
        ).threadblocks
        for config in ("UA", "NAP+NAR")
    }


def fig10_claims(
    preset: Preset, counts: Mapping[str, int] | None = None, search: str = "staged"
) -> dict[str, float]:
    """Fig. 10's store latencies: each configuration at ``counts`` threadblocks, or at its
    best count (by ``search``) when ``counts`` is None."""
    values = {}
    for config, label in (("UA", "ua"), ("NAP+NAR", "nap-nar")):
        plan = HEADLINE_PLAN if counts is None else f"{HEADLINE_PLAN}:tbs={counts[config]}"
        row = run_headline(
            preset, plan, HEADLINE_SIZE, configs=(config,), search=search
        ).table.iloc[0]
        values[f"fig10-{label}-mean"] = float(row["store_mean_ns"])
        values[f"fig10-{label}-max"] = float(row["store_max_ns"])
    return values


def speedup_claims(preset: Preset, search: str = "staged") -> dict[str, float]:
    """Fig. 12's NAP+NAR speedup of the 8-GPU All-Gather at 100 kB and 1 MB, each
    configuration at its best threadblock count (by ``search``)."""
    pod = preset.fit(8).pod
    found = {}
    for size, name in ((SMALL_SIZE, "fig12-100kb"), (HEADLINE_SIZE, "fig12-1mb")):
        times = {
            c: best_threadblocks(
                pod, "allgather", size, c, gpus=8, search=search
            ).result.completion_ps
            for c in ("UA", "NAP+NAR")
        }
        found[name] = times["UA"] / times["NAP+NAR"]
    return found


def measure(
    preset: Preset,
    names: Sequence[str],
    counts: Mapping[str, int] | None = None,
    search: str = "staged",
) -> dict[str, float]:
    """The claims ``names`` on ``preset``, running only what they need; the best counts
    they search for (where ``counts`` does not give them) by ``search``."""
    values = zero_load_claims(preset)
    if any(n.startswith("fig10-") for n in names):
        values.update(fig10_claims(preset, counts, search))
    if any(n.startswith("fig12-") for n in names):
        values.update(speedup_claims(preset, search))
    return {n: values[n] for n in names}


# --- the fit -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """A fit's outcome: the fitted readings, the claims under the literal preset and the
    fitted one, and each claim's sensitivity to each reading near the fit."""

    base: str
    literal: str
    name: str
    readings: dict[str, float]
    document: dict[str, Any]
    claims: pd.DataFrame  # claim, says, paper, kind, set, literal, fitted, residuals, holds
    parameters: pd.DataFrame  # reading, unit, low, high, literal, fitted, at an edge
    sensitivity: pd.DataFrame  # claim x reading: change of the claim per step of a reading
    evaluations: int
    seconds: float
    seed: int


def fit(
    calibration: Calibration,
    readings: Sequence[str],
    train: Sequence[str],
    validate: Sequence[str],
    *,
    seed: int = 0,
    name: str = "nextgen-4die-calibrated",
    maxiter: int = 8,
    popsize: int = 5,
    progress: Callable[[str], None] | None = None,
    search: str = "staged",
) -> Fit:
    """Fit ``readings`` to the claims ``train`` by differential evolution from ``seed``,
    then measure ``train`` and ``validate`` under the literal and the fitted readings;
    every best threadblock count they need is found by ``search``."""
    from scipy.optimize import differential_evolution

    started = time.monotonic()
    chosen = [calibration.readings[r] for r in readings]
    document = base_document(calibration.base)
    literal = load_preset(calibration.literal)
    say = progress or (lambda _: None)
    fig10 = any(c.startswith("fig10-") for c in train)
    counts = headline_counts(literal, search) if fig10 else None
    if counts:
        say(f"Fig. 10's runs held at {calibration.literal}'s best counts: {counts}")
    evaluations = 0
    seen: dict[tuple[float, ...], float] = {}

    def objective(x: np.ndarray) -> float:
        nonlocal evaluations
        snapped = tuple(r.snapped(v) for r, v in zip(chosen, x, strict=True))
        if snapped in seen:  # integer cycles: many points are one preset
            return seen[snapped]
        evaluations += 1
        preset = preset_of(with_readings(document, dict(zip(chosen, snapped, strict=True)), name))
        values = measure(preset, train, counts, search)
        loss = float(np.mean([calibration.claims[c].residual(values[c]) ** 2 for c in train]))
        seen[snapped] = loss
        shown = ", ".join(f"{r.name}={v:g}" for r, v in zip(chosen, snapped, strict=True))
        say(f"evaluation {evaluations}: {shown}: loss {loss:.3f}")
        return loss

    result = differential_evolution(
        objective,
        bounds=[(r.low, r.high) for r in chosen],
        seed=seed,
        maxiter=maxiter,
        popsize=popsize,
        polish=False,
        tol=1e-3,
        init="sobol",
        updating="immediate",
    )
    best = {r: r.snapped(v) for r, v in zip(chosen, result.x, strict=True)}
    fitted_doc = with_readings(document, best, name)
    shown = ", ".join(f"{r.name} {r.preset_value(v)}" for r, v in best.items())
    fitted_doc["description"] = (
        f"{document.get('description', calibration.base)} The readings Table 2 leaves open "
        f"fitted by `nunasim calibrate` (seed {seed}) to {', '.join(train)}: {shown}."
    )
    fitted = preset_of(fitted_doc)
    names = list(dict.fromkeys([*train, *validate]))
    say("measuring every claim under the literal and the fitted readings (full searches)")
    before = measure(literal, names, search=search)
    after = measure(fitted, names, search=search)
    claims = _claims_table(calibration, names, train, before, after)
    parameters = pd.DataFrame(
        [
            {
                "reading": r.name,
                "unit": r.unit,
                "low": r.low,
                "high": r.high,
                "literal": r.literal,
                "fitted": best[r],
                "inside range": r.low <= best[r] <= r.high,
                "reads": r.reads,
                "source": r.source,
            }
            for r in chosen
        ]
    )
    say("sensitivity near the fit")
    sensitivity = _sensitivity(document, chosen, best, train, counts, name, search)
    return Fit(
        calibration.base,
        calibration.literal,
        name,
        {r.name: best[r] for r in chosen},
        fitted_doc,
        claims,
        parameters,
        sensitivity,
        evaluations,
        time.monotonic() - started,
        seed,
    )


def _claims_table(
    calibration: Calibration,
    names: Sequence[str],
    train: Sequence[str],
    before: Mapping[str, float],
    after: Mapping[str, float],
) -> pd.DataFrame:
    rows = []
    for n in names:
        claim = calibration.claims[n]
        low, high = claim.paper
        r0, r1 = claim.residual(before[n]), claim.residual(after[n])
        rows.append(
            {
                "claim": n,
                "says": claim.says,
                "paper": f"{low:g}" if low == high else f"{low:g}-{high:g}",
                "kind": claim.kind,
                "set": "train" if n in train else "validation",
                "literal": before[n],
                "fitted": after[n],
                "residual literal": r0,
                "residual fitted": r1,
                "holds literal": abs(r0) <= 1,
                "holds fitted": abs(r1) <= 1,
            }
        )
    return pd.DataFrame(rows)


def _sensitivity(
    document: Mapping[str, Any],
    chosen: Sequence[Reading],
    best: Mapping[Reading, float],
    names: Sequence[str],
    counts: Mapping[str, int] | None,
    name: str,
    search: str = "staged",
) -> pd.DataFrame:
    """Each claim's change (in its own unit) when one reading moves by a tenth of its range
    from the fit (inwards at an edge), at the fit's threadblock counts (any other count by
    ``search``)."""
    preset = preset_of(with_readings(document, dict(best), name))
    base_values = measure(preset, names, counts, search)
    rows = []
    for reading in chosen:
        step = (reading.high - reading.low) / 10
        if reading.choices:
            others = [c for c in reading.choices if c != best[reading]]
            moved = others[0] if others else best[reading]
        else:
            moved = best[reading] + (step if best[reading] + step <= reading.high else -step)
        values = measure(
            preset_of(with_readings(document, {**best, reading: moved}, name)),
            names,
            counts,
            search,
        )
        rows.append(
            {
                "reading": reading.name,
                "from": best[reading],
                "to": reading.snapped(moved),
                **{n: values[n] - base_values[n] for n in names},
            }
        )
    return pd.DataFrame(rows)


def report_markdown(result: Fit) -> str:
    """The fit's report: claims (train and validation) under both readings, the readings
    against their ranges, and the sensitivity near the fit."""
    c = result.claims

    def number(v: float, kind: str) -> str:
        return f"{v:,.0f} ns" if kind == "latency" else f"{v:.3f}x"

    lines = [
        f"# Calibration of `{result.name}` on `{result.base}`",
        "",
        f"The literal column is `{result.literal}` (Table 2 as written); the fitted one "
        f"`{result.base}` with the fitted readings below.",
        "",
        f"Differential evolution (SciPy) from seed {result.seed}: {result.evaluations} "
        f"presets evaluated, {result.seconds / 60:.1f} minutes. A claim holds when its "
        f"residual is at most 1 in magnitude, as the figures judge it: {tolerance_text()}.",
        "",
        "| claim | set | paper | literal | fitted | residual literal | residual fitted | holds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in c.to_dict("records"):
        lines.append(
            f"| {d['says']} | {d['set']} | {d['paper']} | {number(d['literal'], d['kind'])} | "
            f"{number(d['fitted'], d['kind'])} | {d['residual literal']:+.2f} | "
            f"{d['residual fitted']:+.2f} | {'yes' if d['holds fitted'] else 'no'} |"
        )
    for s in ("train", "validation"):
        part = c[c["set"] == s]
        if len(part):
            lines.append("")
            lines.append(
                f"{s}: {int(part['holds literal'].sum())} of {len(part)} hold under the literal "
                f"reading, {int(part['holds fitted'].sum())} of {len(part)} under the fit."
            )
    lines += ["", "| reading | range | literal | fitted | source |", "|---|---|---|---|---|"]
    for row in result.parameters.itertuples(index=False):
        lines.append(
            f"| {row.reading} | {row.low:g}-{row.high:g} {row.unit} | {row.literal:g} | "
            f"{row.fitted:g} | {row.source} |"
        )
    s = result.sensitivity
    if len(s):
        claims = [k for k in s.columns if k not in ("reading", "from", "to")]
        lines += [
            "",
            "Sensitivity near the fit: each claim's change when one reading moves by a tenth "
            "of its range (Fig. 10 at the fit's counts):",
            "",
            "| reading | move | " + " | ".join(claims) + " |",
            "|---|---|" + "---|" * len(claims),
        ]
        for row in s.to_dict("records"):
            cells = " | ".join(f"{row[k]:+.3g}" for k in claims)
            lines.append(f"| {row['reading']} | {row['from']:g} -> {row['to']:g} | {cells} |")
    return "\n".join(lines) + "\n"


def write_fit(result: Fit, folder: Path) -> list[Path]:
    """The fitted preset, its report and its tables, written under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    preset_path = folder / f"{result.name}.yaml"
    header = (
        f"# {result.name}: {result.base} with the readings Table 2 leaves open fitted by\n"
        f"# `nunasim calibrate` (seed {result.seed}); see {result.name}.md for the fit.\n"
    )
    files = {
        preset_path: header + yaml.safe_dump(result.document, sort_keys=False),
        folder / f"{result.name}.md": report_markdown(result),
        folder / f"{result.name}-claims.csv": result.claims.to_csv(index=False),
        folder / f"{result.name}-sensitivity.csv": result.sensitivity.to_csv(index=False),
    }
    for path, text in files.items():
        staged = path.with_name(path.name + ".part")
        staged.write_text(text, encoding="utf-8")
        staged.replace(path)
    load_preset(str(preset_path))  # the written preset reads back as a valid one
    return list(files)
