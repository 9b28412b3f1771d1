"""``nunasim calibrate``: fit the readings Table 2 leaves open to chosen claims of the paper
and write the fitted preset beside its report."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.cli.options import search_option
from nunasim.cli.progress import run_progress
from nunasim.errors import ConfigError
from nunasim.experiments.calibrate import fit, load_calibration, report_markdown, write_fit
from nunasim.io.files import check_output_folder, output_folder


def _names(text: str | None, known: dict, what: str) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(
            f"unknown {what} {', '.join(unknown)} (known: {', '.join(known)})", source=f"--{what}s"
        )
    return names


@click.command("calibrate")
@click.option("--readings", help="Readings to fit, comma-separated (default: all declared).")
@click.option("--train", help="Claims to fit them to (default: the declared training set).")
@click.option(
    "--validate",
    help="Claims held out and measured after the fit (default: every other declared claim).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The optimiser's seed.")
@click.option(
    "--generations",
    type=click.IntRange(1, 200),
    default=8,
    show_default=True,
    help="Differential evolution's generations (each evaluates the population once).",
)
@click.option(
    "--population",
    type=click.IntRange(2, 50),
    default=5,
    show_default=True,
    help="Population per reading fitted.",
)
@click.option("--name", default="nextgen-4die-calibrated", show_default=True)
@search_option("fast")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("calibration"),
    show_default=True,
    help="Folder for the fitted preset (NAME.yaml), its report (NAME.md) and tables.",
)
def calibrate_command(
    readings: str | None,
    train: str | None,
    validate: str | None,
    seed: int,
    generations: int,
    population: int,
    name: str,
    search: str,
    out_dir: Path,
) -> None:
    """Fit the open readings (I/O-die crossing and width, die crossing, bisection) within
    their declared ranges to the training claims (section 1, section 3.1.3, Fig. 10 by
    default), by SciPy's differential evolution from a seed; then measure every claim,
    trained and held out, under the literal preset and the fit."""
    check_output_folder(out_dir)
    calibration = load_calibration()
    chosen = _names(readings, calibration.readings, "reading") or list(calibration.readings)
    trained = _names(train, calibration.claims, "train") or list(calibration.train)
    held = _names(validate, calibration.claims, "validate")
    if held is None:
        held = [c for c in calibration.claims if c not in trained]
    with run_progress("calibrate") as progress:
        result = fit(
            calibration,
            chosen,
            trained,
            held,
            seed=seed,
            name=name,
            maxiter=generations,
            popsize=population,
            progress=progress,
            search=search,
        )
    with output_folder(out_dir) as folder:
        written = write_fit(result, folder)
    click.echo(report_markdown(result))
    click.echo("wrote " + ", ".join(str(out_dir / p.name) for p in written))
