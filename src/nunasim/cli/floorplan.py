"""``nunasim floorplan``: a picture of a socket."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.errors import ConfigError
from nunasim.hardware.tables import floorplan_tables
from nunasim.io.files import write_atomically
from nunasim.io.presets import load_preset
from nunasim.plotting.floorplan import draw_floorplan


@click.command()
@click.argument("name_or_file")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
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
    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ConfigError("the picture must be a .png, .svg or .pdf file", source=str(output))
    item = load_preset(name_or_file)
    socket = item.socket
    tables = floorplan_tables(socket, granularity)
    title = (
        f"{item.name}: {len(socket.dies)} dies, {socket.cus} CUs, {len(socket.stacks)} HBM stacks, "
        f"{len(socket.ports)} I/O ports" + (f", {granularity} NAR domains" if granularity else "")
    )
    figure = draw_floorplan(tables, title)
    fmt = output.suffix.lower().lstrip(".")
    write_atomically(output, lambda path: figure.savefig(path, dpi=150, format=fmt))
    click.echo(f"wrote {output}")
