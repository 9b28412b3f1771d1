"""Options of the commands that run sweeps: where the points run and the result cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from nunasim.cli.cache import cache_dir_option
from nunasim.experiments.cache import ResultCache
from nunasim.experiments.executor import Tracker, check_workers
from nunasim.experiments.run_options import RunOptions


def dask_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--scheduler`` and ``--workers``."""
    command = click.option(
        "--workers",
        type=int,
        default=None,
        help="Processes of the local Dask cluster (default: one per core; 1: no cluster).",
    )(command)
    return click.option(
        "--scheduler",
        default=None,
        metavar="tcp://HOST:PORT",
        help="Run the points on the Dask cluster of this scheduler.",
    )(command)


def cache_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--cache-dir`` and ``--no-cache``."""
    command = click.option("--no-cache", is_flag=True, help="Run every point, store nothing.")(
        command
    )
    return cache_dir_option(command)


def out_folder_option(default: str, help: str) -> Callable[..., Any]:
    """``--out``: the folder a command writes its files into."""
    return click.option(
        "--out",
        "out_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path(default),
        show_default=True,
        help=help,
    )


def run_options(
    scheduler: str | None,
    workers: int | None,
    cache_dir: Path | None,
    no_cache: bool,
    tracker: Callable[[str], Tracker] | None,
    search: str = "staged",
) -> RunOptions:
    """The options, checked before anything runs."""
    check_workers(workers)
    cache = None if no_cache else ResultCache(cache_dir)
    if cache is not None:
        cache.check()
    return RunOptions(
        cache=cache, scheduler=scheduler, workers=workers, tracker=tracker, search=search
    )
