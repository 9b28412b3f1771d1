"""One self-contained HTML page from the folders a run wrote (``nunasim report``,
``reproduce --html``): every picture, the paper's claims beside ours with their verdicts,
what ran (``run.json``, the preset's figures) and every table, sortable by any column.

The page carries everything in itself (pictures as data URIs, its style and script
inline) and a content security policy that lets it load nothing else, so it opens from a
file, a mail or a shared drive, with no server and no network."""

from __future__ import annotations

import base64
import html
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nunasim import __version__
from nunasim.errors import ConfigError
from nunasim.experiments.figures import FIGURES
from nunasim.experiments.figures.common import numbered_tally, tolerance_text
from nunasim.experiments.report import read_claims, readable
from nunasim.io.files import MAX_INPUT_BYTES, write_atomically

# A page is opened whole by a browser: beyond this the folder is not a run's output.
MAX_PAGE_BYTES = 256 << 20
ASSETS = "html_report_assets"
_VERDICT_CLASS = {"holds": "holds", "direction only": "direction", "no": "fails"}
_FILE_TYPES = {".png", ".csv", ".json", ".yaml", ".conf"}  # .conf: NCCL's tuner file


@dataclass
class Section:
    """One folder of the run: its pictures, claims, tables and run record."""

    name: str
    folder: Path
    title: str
    run: dict[str, Any] = field(default_factory=dict)
    pictures: list[Path] = field(default_factory=list)
    claims: pd.DataFrame | None = None  # paper.csv: claim, paper, ours, verdict
    tables: list[Path] = field(default_factory=list)
    texts: list[Path] = field(default_factory=list)


def find_sections(folder: Path) -> list[Section]:
    """The folders under ``folder`` (and ``folder`` itself) holding a run's files; the
    paper's figures in the paper's order, then any other folder by name."""
    if not folder.is_dir():
        raise ConfigError("is not a folder of results", source=str(folder))
    candidates = [folder, *sorted(p for p in folder.iterdir() if p.is_dir())]
    sections = [s for s in map(_section, candidates) if s is not None]
    if not sections:
        raise ConfigError(
            "holds no run's tables or pictures (.csv, .png): give the folder that "
            "nunasim reproduce, fig9 or tune wrote (--out)",
            source=str(folder),
        )
    order = {name: i for i, name in enumerate(FIGURES)}
    return sorted(sections, key=lambda s: (order.get(s.name, len(order)), s.name))


def _section(folder: Path) -> Section | None:
    files = sorted(
        p
        for p in folder.iterdir()
        if p.suffix in _FILE_TYPES and p.is_file() and not p.is_symlink()
    )
    if not any(p.suffix in (".png", ".csv") for p in files):
        return None
    run: dict[str, Any] = {}
    section = Section(folder.name, folder, folder.name)
    for path in files:
        if path.name == "run.json":
            run = _json(path)
        elif path.suffix == ".png":
            section.pictures.append(path)
        elif path.name == "paper.csv":
            section.claims = read_claims(path)
        elif path.suffix == ".csv":
            section.tables.append(path)
        else:
            section.texts.append(path)
    section.run = run
    section.title = str(run.get("title", folder.name))
    return section


def _read(path: Path) -> bytes:
    if path.stat().st_size > MAX_INPUT_BYTES:
        raise ConfigError(
            f"is larger than {MAX_INPUT_BYTES >> 20} MiB, more than a run writes", source=str(path)
        )
    return path.read_bytes()


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(_read(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"is not JSON: {exc}", source=str(path)) from None
    if not isinstance(value, dict):
        raise ConfigError("is not a JSON object (a run's record)", source=str(path))
    return value


def _csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(
            path, keep_default_na=False, na_values=[""], encoding_errors="backslashreplace"
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ConfigError(f"is not a readable CSV table: {exc}", source=str(path)) from None


def _e(value: Any) -> str:
    # Names and claims come from files anyone can write: never markup.
    return html.escape(str(value).encode("utf-8", "backslashreplace").decode("utf-8"))


def _sort_key(value: Any) -> str:
    """The value a column sorts by: numbers as numbers, the rest as its text."""
    if isinstance(value, bool | np.bool_):
        return ""
    if isinstance(value, int | np.integer):
        return f' data-v="{int(value)}"'
    if isinstance(value, float | np.floating) and math.isfinite(value):
        return f' data-v="{float(value)!r}"'
    return ""


def table_html(table: pd.DataFrame, css: str = "data") -> str:
    """``table`` as a sortable HTML table: each cell shows its readable text and, where
    the value is a number, sorts by the number (a size by its bytes, a time by its ps)."""
    shown = readable(table)
    head = "".join(f'<th scope="col">{_e(c)}</th>' for c in shown.columns)
    rows = []
    for raw, text in zip(table.itertuples(False), shown.itertuples(False), strict=True):
        cells = "".join(
            f"<td{_sort_key(r)}>{'' if _blank(t) else _e(t)}</td>"
            for r, t in zip(raw, text, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    return (
        f'<table class="{css} sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def claims_html(claims: pd.DataFrame) -> str:
    """The paper's claims beside ours, each row marked by its verdict."""
    rows = []
    for row in claims.itertuples(False):
        verdict = str(row.verdict)
        css = _VERDICT_CLASS.get(verdict.split(" (")[0], "unmeasured")
        rows.append(
            f'<tr class="{css}"><td>{_e(row.claim)}</td><td>{_e(row.paper)}</td>'
            f'<td>{_e(row.ours)}</td><td class="verdict">{_e(verdict)}</td></tr>'
        )
    return (
        '<table class="claims sortable"><thead><tr><th scope="col">claim</th>'
        '<th scope="col">paper</th><th scope="col">nunasim</th><th scope="col">verdict</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def verdict_counts(sections: list[Section]) -> dict[str, int]:
    counts = {"holds": 0, "direction only": 0, "no": 0, "not measured": 0}
    for section in sections:
        if section.claims is None:
            continue
        for verdict in section.claims["verdict"]:
            key = str(verdict).split(" (")[0]
            counts[key if key in counts else "not measured"] += 1
    return counts


def _numbered_text(sections: list[Section]) -> str:
    """How many of the paper's numbered claims hold in magnitude over the run's figures."""
    holding = numbered = 0
    for section in sections:
        if section.claims is not None:
            held, count = numbered_tally(section.name, section.claims)
            holding, numbered = holding + held, numbered + count
    return (
        f"{holding} of the {numbered} claims with a number hold in magnitude. " if numbered else ""
    )


def _run_html(run: dict[str, Any]) -> str:
    plain = {k: v for k, v in run.items() if not isinstance(v, dict | list)}
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in plain.items())
    out = f'<table class="run">{rows}</table>' if rows else ""
    preset = run.get("preset_summary")
    if isinstance(preset, dict):
        out += (
            f"<details><summary>preset {_e(preset.get('name', ''))}: its figures</summary>"
            f"<pre>{_e(json.dumps(preset, indent=1))}</pre></details>"
        )
    return out


def _picture_html(path: Path, title: str) -> str:
    data = base64.b64encode(_read(path)).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{_e(title)}: {_e(path.name)}">'
        f"<figcaption>{_e(path.name)}</figcaption></figure>"
    )


def _section_html(section: Section) -> str:
    parts = [f'<section id="{_e(section.name)}"><h2>{_e(section.title)}</h2>']
    parts.append(f'<p class="where">{_e(section.name)}/</p>')
    parts.append(_run_html(section.run))
    parts.extend(_picture_html(p, section.title) for p in section.pictures)
    if section.claims is not None:
        parts.append("<h3>The paper's claims beside ours</h3>")
        parts.append(claims_html(section.claims))
    for path in section.tables:
        table = _csv(path)
        parts.append(
            f"<details{' open' if len(table) <= 40 else ''}><summary>{_e(path.name)}: "
            f"{len(table):,} rows</summary>{table_html(table)}</details>"
        )
    for path in section.texts:
        text = _read(path).decode("utf-8", "backslashreplace")
        parts.append(f"<details><summary>{_e(path.name)}</summary><pre>{_e(text)}</pre></details>")
    parts.append("</section>")
    return "".join(parts)


def _asset(name: str) -> str:
    return resources.files("nunasim.experiments").joinpath(ASSETS, name).read_text("utf-8")


def render_html(
    folder: Path, title: str | None = None, sections: list[Section] | None = None
) -> str:
    """The page for the run in ``folder`` (its ``find_sections``, unless given)."""
    sections = find_sections(folder) if sections is None else sections
    counts = verdict_counts(sections)
    heading = title or f"nunasim results: {folder.resolve().name}"
    contents = "".join(
        f'<li><a href="#{_e(s.name)}">{_e(s.title)}</a> ({len(s.pictures)} '
        f"picture{'s' if len(s.pictures) != 1 else ''})</li>"
        for s in sections
    )
    summary = ""
    if any(s.claims is not None for s in sections):
        summary = (
            '<p class="summary">Claims: '
            + ", ".join(
                f'<span class="{_VERDICT_CLASS.get(k, "unmeasured")}">{n} {_e(k)}</span>'
                for k, n in counts.items()
            )
            + f". {_e(_numbered_text(sections))}A claim <em>holds</em> when its direction "
            "does and, where the paper gives a number, ours is within the claim's tolerance "
            f"of it: {_e(tolerance_text())}.</p>"
        )
    body = "".join(map(_section_html, sections))
    page = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(heading)}</title><style>{_asset('report.css')}</style></head>"
        f"<body><header><h1>{_e(heading)}</h1>"
        f'<p class="where">from {_e(folder)}, by nunasim {_e(__version__)}</p>{summary}'
        f"<nav><ol>{contents}</ol></nav></header><main>{body}</main>"
        f"<script>{_asset('sortable.js')}</script></body></html>\n"
    )
    if len(page) > MAX_PAGE_BYTES:
        raise ConfigError(
            f"would make a page of {len(page) >> 20} MiB (at most {MAX_PAGE_BYTES >> 20} MiB): "
            "report a folder of one run",
            source=str(folder),
        )
    return page


def write_html_report(
    folder: Path, path: Path, title: str | None = None, sections: list[Section] | None = None
) -> Path:
    page = render_html(folder, title, sections)
    return write_atomically(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))
