"""``nunasim report``: one self-contained HTML page of the tables and pictures a run
wrote, to open in any browser, share, or put beside the paper."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.io.files import check_output


@click.command("report")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="The page to write (.html).",
)
@click.option("--title", default=None, help="The page's heading (default: from the folder).")
def report_command(folder: Path, output: Path, title: str | None) -> None:
    """Write one HTML page of everything under FOLDER that nunasim reproduce, fig9 or
    tune wrote: every picture, the paper's claims beside ours with their verdicts, the
    run's parameters and preset, and every table, sortable by any column. The page
    needs no server and loads nothing from the network."""
    from nunasim.experiments.html_report import find_sections, write_html_report

    check_output(output, (".html", ".htm"), "a page")
    sections = find_sections(folder)
    write_html_report(folder, output, title, sections)
    pictures = sum(len(s.pictures) for s in sections)
    click.echo(
        f"wrote {output}: {len(sections)} section{'s' if len(sections) != 1 else ''}, "
        f"{pictures} picture{'s' if pictures != 1 else ''}"
    )
