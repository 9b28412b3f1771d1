"""``nunasim cache info|clear``: the result cache sweeps keep their finished points in."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.experiments.cache import ResultCache

cache_dir_option = click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The result cache's folder (default: $NUNASIM_CACHE, else ~/.cache/nunasim).",
)


@click.group("cache")
def cache_group() -> None:
    """The result cache: finished sweep points, one file each, reused by later sweeps."""


@cache_group.command("info")
@cache_dir_option
def info_command(cache_dir: Path | None) -> None:
    """The cache's folder, how many points it holds, their size, and what the points that
    were timed took to compute."""
    cache = ResultCache(cache_dir)
    info = cache.info()
    click.echo(f"folder: {info.folder}\npoints: {info.points}\nbytes:  {info.bytes}")
    timed, seconds = cache.computing_time()
    if timed:
        click.echo(f"computing: {seconds:,.0f} s over the {timed} timed points")
    if info.shipped is not None and info.shipped_points:
        click.echo(
            f"shipped: {info.shipped_points} points inside the package ({info.shipped}), "
            "read-only, looked up after the folder's"
        )


@cache_group.command("clear")
@cache_dir_option
def clear_command(cache_dir: Path | None) -> None:
    """Delete every point the cache's folder holds: only files that read as its entries
    (named by a key, of its format); anything else is left, and named. The points the
    package ships are never deleted."""
    cache = ResultCache(cache_dir)
    deleted, kept = cache.clear()
    click.echo(f"deleted {deleted} points from {cache.folder}")
    for path in kept:
        click.echo(f"kept {path}: named as an entry, but not one", err=True)
