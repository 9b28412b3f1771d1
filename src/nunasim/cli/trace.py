"""``nunasim trace sizes``: the collective-size distribution of execution traces."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.cli.figures import check_figure_path, save_figure
from nunasim.experiments.llm_study import size_cdf, trace_table
from nunasim.units import format_bytes, format_size

# Thresholds the printed CDF is read at: powers of 4 from 1 kB to 1 GB.
_THRESHOLDS = tuple(1024 * 4**i for i in range(11))


@click.group("trace")
def trace() -> None:
    """Read execution traces (Chakra ET, PyTorch ET JSON)."""


@trace.command("sizes")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draw the CDFs here (.png, .pdf, .svg).",
)
def sizes(files: tuple[Path, ...], plot: Path | None) -> None:
    """Print the cumulative distribution of collective sizes in FILES by collective kind."""
    check_figure_path(plot)
    table = trace_table(files)
    if table.empty:
        click.echo("no collectives found")
        return
    for (source, kind), group in table.groupby(["source", "kind"], sort=False):
        sizes_ = group["size"].sort_values().to_numpy()
        low, median, high = (format_bytes(int(sizes_[i])) for i in (0, len(sizes_) // 2, -1))
        count = f"{len(sizes_)} collective{'s' if len(sizes_) != 1 else ''}"
        click.echo(f"{source}  {kind}: {count}, min {low}, median {median}, max {high}")
        shown = [t for t in _THRESHOLDS if sizes_[0] <= t * 4 and t <= sizes_[-1] * 4]
        cdf = "  ".join(f"<={format_size(t)}: {(sizes_ <= t).mean():.2f}" for t in shown)
        click.echo(f"    CDF  {cdf}")
    if plot is not None:
        save_figure(_draw(table), plot)
        click.echo(f"wrote {plot}")


def _draw(table):  # type: ignore[no-untyped-def]
    from nunasim.plotting.llm import draw_size_cdfs

    return draw_size_cdfs(size_cdf(table), "Collective sizes in execution traces")
