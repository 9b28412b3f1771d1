"""Running a sweep's points: in this process one after the other, or as independent tasks
on a Dask cluster (a local one, or an existing one at a scheduler's address), with every
finished point stored in the result cache as it finishes.

Points are deterministic and independent, so where and in which order they run changes
nothing: the rows come back in the order of the points. The cache is written by this
process (the client), never by a worker, so a worker needs no access to the cache folder
and a sweep killed at any moment keeps exactly the points it had received.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from nunasim.errors import ConfigError
from nunasim.experiments.cache import ResultCache, plain_row, point_key

if TYPE_CHECKING:
    from nunasim.hardware import Preset

Row = dict[str, Any]
RunRow = Callable[..., Row]  # (point, preset, progress) -> row


class Tracker(Protocol):
    """What a sweep reports while it runs (the command line draws it)."""

    def start(self, total: int, cached: int) -> None: ...

    def advance(self, what: str) -> None: ...

    def close(self) -> None: ...


def same_as_stored(row: Row) -> Row:
    """``row`` as the cache gives it back, so a fresh row and a cached one are equal."""
    return json.loads(json.dumps(plain_row(row)))


def check_workers(workers: int | None) -> None:
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ConfigError(f"workers must be at least 1 (or None: every core); got {workers}")


def execute(
    points: Sequence[Any],
    preset: Preset,
    run_row: RunRow,
    *,
    cache: ResultCache | None = None,
    scheduler: str | None = None,
    workers: int | None = 1,
    tracker: Tracker | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Row]:
    """The row of every point, in order: from ``cache`` when it holds the point, else from
    ``run_row(point, preset, progress)``, in this process when ``workers`` is 1 and no
    ``scheduler`` is given, else on Dask (``workers`` processes of a local cluster, None:
    one per core; or the cluster at ``scheduler``)."""
    check_workers(workers)
    keys = [point_key(point, preset) for point in points] if cache is not None else None
    rows: list[Row | None] = [None] * len(points)
    todo: dict[str, list[int]] = {}  # one run per distinct key
    for index in range(len(points)):
        key = keys[index] if keys is not None else str(index)
        stored = cache.find(points[index], preset) if cache is not None else None
        if stored is not None:
            rows[index] = stored
        else:
            todo.setdefault(key, []).append(index)
    if tracker:
        tracker.start(len(points), len(points) - sum(len(v) for v in todo.values()))

    def finished(key: str, row: Row) -> None:
        row = same_as_stored(row)
        first = points[todo[key][0]]
        if cache is not None:
            cache.put(key, row, first.describe())
        for index in todo[key]:
            rows[index] = row
        if tracker:
            tracker.advance(first.describe())

    try:
        cores = os.cpu_count() or 1
        serial = scheduler is None and (workers == 1 or (workers is None and cores == 1))
        if serial or not todo:
            for key, indices in todo.items():
                finished(key, run_row(points[indices[0]], preset, progress))
        else:
            _on_dask(todo, points, preset, run_row, scheduler, workers or cores, finished)
    finally:
        if tracker:
            tracker.close()
    return [row for row in rows if row is not None]


def _on_dask(
    todo: dict[str, list[int]],
    points: Sequence[Any],
    preset: Preset,
    run_row: RunRow,
    scheduler: str | None,
    workers: int,
    finished: Callable[[str, Row], None],
) -> None:
    from dask.distributed import Client, LocalCluster, as_completed

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ConfigError(f"cannot reach the Dask scheduler: {exc}", source=scheduler) from None
        cluster = None
    else:
        cluster = LocalCluster(
            n_workers=min(workers, len(todo)),
            threads_per_worker=1,
            processes=True,
            # Loopback only: the dashboard answers without authentication, and a port alone
            # (":0") binds it on every interface. Any free port, since the scheduler serves
            # HTTP even without a dashboard and a fixed one would clash with another cluster.
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    try:
        futures = {
            client.submit(run_row, points[indices[0]], preset, None, pure=False): key
            for key, indices in todo.items()
        }
        try:
            for future in as_completed(futures):
                finished(futures[future], future.result())
        except BaseException:
            client.cancel(list(futures))
            raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
