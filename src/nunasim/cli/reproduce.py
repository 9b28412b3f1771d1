"""``nunasim reproduce``: the paper's result figures, each a table, a picture and the
paper's claims beside ours, and the reproduction report drawn from them."""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nunasim import __version__
from nunasim.cli.figures import save_figure
from nunasim.cli.options import preset_option, search_option
from nunasim.cli.progress import SweepProgress
from nunasim.cli.sweep_options import (
    cache_options,
    dask_options,
    out_folder_option,
    run_options,
)
from nunasim.errors import ConfigError
from nunasim.experiments.figures import FIGURES
from nunasim.experiments.figures.common import FigureRun
from nunasim.hardware.summary import summarise
from nunasim.io.files import check_output, check_output_folder, write_atomically
from nunasim.io.presets import load_preset
from nunasim.io.results import write_table

if TYPE_CHECKING:
    from nunasim.experiments.sweep import PointTimes

ALL = "all"


def figure_names(names: tuple[str, ...]) -> list[str]:
    """The figures asked for, in ``FIGURES``'s order; ``all``: every one."""
    unknown = [name for name in names if name != ALL and name not in FIGURES]
    if unknown:
        known = ", ".join([*FIGURES, ALL])
        raise ConfigError(f"unknown figure {unknown[0]!r} (known: {known})")
    wanted = set(FIGURES) if ALL in names else set(names)
    return [name for name in FIGURES if name in wanted]


def write_figure(
    outcome: FigureRun,
    folder: Path,
    preset: str,
    seconds: float,
    times: PointTimes | None = None,
    parameters: dict[str, Any] | None = None,
) -> list[Path]:
    """The figure's files in ``folder``: its table (Parquet and CSV), its picture, the
    paper's claims beside ours (``paper.csv``) and what ran (``run.json``: this run's
    seconds and ``parameters``, and with ``times`` what its sweep's points took to
    compute, cached ones included)."""
    from nunasim.plotting.llm import draw_fig15_choices, draw_size_cdf_table
    from nunasim.plotting.paper_figures import DRAW_TABLE, draw_fig10

    folder.mkdir(parents=True, exist_ok=True)
    name = outcome.name
    written = [
        write_table(outcome.table, folder / f"{name}.parquet"),
        write_table(outcome.table, folder / f"{name}.csv"),
        write_table(outcome.comparison, folder / "paper.csv"),
    ]
    title = f"{outcome.title} ({preset}{', quick grid' if outcome.quick else ''})"
    if name == "fig10":
        picture = draw_fig10(outcome.stores, title, outcome.table)
    elif name == "fig15":
        # the summary is the figure's table; the bars are drawn from every model's choice
        choices = outcome.stores["choices"]
        written.append(write_table(choices, folder / "fig15-choices.parquet"))
        written.append(write_table(choices, folder / "fig15-choices.csv"))
        picture = draw_fig15_choices(choices, title)
    elif name == "fig2":
        picture = draw_size_cdf_table(outcome.table, title)
    else:
        picture = DRAW_TABLE[name](outcome.table, title)
    save_figure(picture, folder / f"{name}.png")
    written.append(folder / f"{name}.png")
    meta = {
        "figure": name,
        "title": outcome.title,
        "quick": outcome.quick,
        "preset": preset,
        "seconds": round(seconds, 1),
        **(parameters or {}),
    }
    if times is not None:
        meta.update(
            points=times.points, points_timed=times.timed, point_seconds=round(times.seconds, 1)
        )
    text = json.dumps(meta, indent=1)
    write_atomically(folder / "run.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return written


# The mark before each claim: it holds (in magnitude too, where it has a number), only
# its direction holds, it does not, or it was not measured.
_MARKS = {"holds": "yes", "direction only": "dir", "no": "no", "not measured": "-"}


@click.command("reproduce")
@click.argument("figures", nargs=-1)
@click.option("--quick", is_flag=True, help="Reduced grids that still show each trend (CI).")
@out_folder_option("reproduction", "Folder for each figure's folder of tables and picture.")
@click.option(
    "--report",
    "report",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the reproduction report (Markdown) from the tables in --out.",
)
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write one self-contained HTML page of every figure, claim and table in --out.",
)
@preset_option
@search_option("staged")
@dask_options
@cache_options
def reproduce_command(
    figures: tuple[str, ...],
    quick: bool,
    out_dir: Path,
    report: Path | None,
    html: Path | None,
    preset_name: str,
    scheduler: str | None,
    workers: int | None,
    cache_dir: Path | None,
    no_cache: bool,
    search: str,
) -> None:
    """Reproduce the paper's result figures: FIGURES are fig9 to fig15, fig2, or all. Each
    writes, under --out, its table, its picture and the paper's claims beside ours."""
    if not figures and report is None and html is None:
        raise ConfigError(
            "name the figures to reproduce (fig9 ... fig15, fig2, or all), or --report or --html"
        )
    names = figure_names(figures)
    check_output_folder(out_dir)
    if report is not None:
        check_output(report, (".md",), "a report")
    if html is not None:
        check_output(html, (".html", ".htm"), "a page")
    options = run_options(scheduler, workers, cache_dir, no_cache, SweepProgress, search)
    preset = load_preset(preset_name)
    parameters = {
        "search": search,
        "cache": "none" if no_cache else str(cache_dir or "default"),
        "nunasim": __version__,
        "preset_summary": summarise(preset).as_dict(),
    }
    for name in names:
        started = time.monotonic()
        outcome = importlib.import_module(FIGURES[name]).run(preset, quick, options)
        seconds = time.monotonic() - started
        write_figure(
            outcome, out_dir / name, preset.name, seconds, options.times.get(name), parameters
        )
        click.echo(f"{name}: {outcome.title} ({seconds:.0f} s), in {out_dir / name}")
        for row in outcome.comparison.itertuples():
            mark = _MARKS.get(str(row.verdict).split(" (")[0], "no")
            said = f"; {row.verdict}" if mark in ("dir", "no") and "(" in row.verdict else ""
            click.echo(f"  [{mark:>3}] {row.claim}: paper {row.paper}; ours {row.ours}{said}")
    if report is not None:
        from nunasim.experiments.report import write_report

        write_report(out_dir, report)
        click.echo(f"wrote {report}")
    if html is not None:
        from nunasim.experiments.html_report import write_html_report

        write_html_report(out_dir, html, f"nunasim reproduction of the paper ({preset.name})")
        click.echo(f"wrote {html}")
