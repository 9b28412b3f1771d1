"""Options of the commands that run sweeps: where the points run and the result cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

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


def run_options(
    scheduler: str | None,
    workers: int | None,
    cache_dir: Path | None,
    no_cache: bool,
    tracker: Callable[[str], Tracker] | None,
) -> RunOptions:
    """The options, checked before anything runs."""
    check_workers(workers)
    cache = None if no_cache else ResultCache(cache_dir)
    if cache is not None:
        cache.check()
    return RunOptions(cache=cache, scheduler=scheduler, workers=workers, tracker=tracker)
