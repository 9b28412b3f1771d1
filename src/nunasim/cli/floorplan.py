"""``nunasim floorplan``: a picture of a socket."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.cli.figures import check_figure_path, save_figure
from nunasim.cli.options import file_option
from nunasim.hardware.tables import floorplan_tables
from nunasim.io.presets import load_preset
from nunasim.plotting.floorplan import draw_floorplan


@click.command()
@click.argument("name_or_file")
@file_option(
    "-o",
    "--output",
    required=True,
    help="Picture to write (.png, .svg or .pdf).",
)
@click.option(
    "--nar",
    "granularity",
    type=int,
    default=None,
    help="Colour the ports by NAR domain at this granularity.",
)
def floorplan(name_or_file: str, output: Path, granularity: int | None) -> None:
    """Draw a socket: mesh, dies, CUs, HBM stacks, I/O ports (and NAR domains)."""
    check_figure_path(output)
    item = load_preset(name_or_file)
    socket = item.socket
    tables = floorplan_tables(socket, granularity)
    title = (
        f"{item.name}: {len(socket.dies)} dies, {socket.cus} CUs, {len(socket.stacks)} HBM stacks, "
        f"{len(socket.ports)} I/O ports" + (f", {granularity} NAR domains" if granularity else "")
    )
    figure = draw_floorplan(tables, title)
    save_figure(figure, output)
    click.echo(f"wrote {output}")
