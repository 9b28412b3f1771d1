"""A sweep's progress on stderr: a bar with points done, points cached and the time left on
a terminal; a plain line now and then when stderr is a file or a pipe (a CI log)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from tqdm import tqdm

# Seconds between two plain lines: often enough to see a long sweep move, rarely enough
# not to flood a log.
PLAIN_EVERY_S = 10.0


class SweepProgress:
    """A ``Tracker`` for ``run_points``, named ``label`` in what it prints."""

    def __init__(self, label: str, plain_every_s: float = PLAIN_EVERY_S) -> None:
        self.label = label
        self.plain_every_s = plain_every_s
        self.bar: tqdm | None = None
        self.total = self.cached = self.ran = 0
        self.started = self.last_line = 0.0
        self.lock = threading.Lock()
        self.heartbeat: Heartbeat | None = None

    def start(self, total: int, cached: int) -> None:
        self.total, self.cached, self.ran = total, cached, 0
        self.started = self.last_line = time.monotonic()
        if sys.stderr.isatty():
            from tqdm import tqdm  # loaded only when a bar is drawn

            self.bar = tqdm(total=total, initial=cached, desc=self.label, unit="point", leave=False)
            self.bar.set_postfix_str(f"{cached} cached")
        else:
            self._line(force=True)
        # A point can run for minutes: the bar's clock and the log's lines keep moving.
        if cached < total:
            self.heartbeat = Heartbeat(self._tick).__enter__()

    def advance(self, what: str) -> None:
        self.ran += 1
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.cached} cached, last: {what}")
            self.bar.update(1)
        else:
            self._line(force=self.ran + self.cached == self.total)

    def close(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.__exit__(None, None, None)
            self.heartbeat = None
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _tick(self) -> None:
        if self.bar is not None:
            self.bar.refresh()
        else:
            self._line()

    def _line(self, force: bool = False) -> None:
        with self.lock:
            now = time.monotonic()
            if not force and now - self.last_line < self.plain_every_s:
                return
            self.last_line = now
            done = self.ran + self.cached
            left = ""
            if self.ran and done < self.total:
                eta = (now - self.started) / self.ran * (self.total - done)
                left = f", about {eta:.0f} s left"
            elif done < self.total and now - self.started >= 1:
                left = f", {now - self.started:.0f} s so far"
            click.echo(
                f"{self.label}: {done}/{self.total} points ({self.cached} cached, "
                f"{self.ran} run){left}",
                err=True,
            )


class PlainLines:
    """Progress messages (a search's candidates) as plain lines on stderr for a log: the
    first once ``plain_every_s`` (default ``PLAIN_EVERY_S``) have passed, then at most one
    every ``plain_every_s``, each with the time so far; a run or a refusal quicker than
    that prints none. ``tick`` (from a ``Heartbeat``) prints the last message again when a
    long phase (one engine run, a preparation) sends none for that long."""

    def __init__(self, label: str, plain_every_s: float | None = None) -> None:
        self.label = label
        self.plain_every_s = PLAIN_EVERY_S if plain_every_s is None else plain_every_s
        self.started = self.last_line = time.monotonic()
        self.last_what = "starting"
        self.lock = threading.Lock()

    def __call__(self, what: str) -> None:
        self.last_what = what
        self._line(what)

    def tick(self) -> None:
        self._line(f"{self.last_what}, still running")

    def _line(self, text: str) -> None:
        with self.lock:
            now = time.monotonic()
            if now - self.last_line < self.plain_every_s:
                return
            self.last_line = now
            click.echo(f"{self.label}: {text}, {now - self.started:.0f} s", err=True)


class Heartbeat:
    """Calls ``beat`` every ``every_s`` seconds from a daemon thread while the ``with``
    block runs: a bar's clock or a log's line keeps moving through a phase that reports
    nothing (the compiled loops release the interpreter, so the thread runs beside them)."""

    def __init__(self, beat: Callable[[], object], every_s: float = 1.0) -> None:
        self.beat = beat
        self.every_s = every_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="nunasim-progress", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(self.every_s):
            self.beat()

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop.set()
        self.thread.join()


@contextmanager
def run_progress(
    label: str, counting: bool = True, first: str | None = None
) -> Iterator[Callable[[str], None]]:
    """A command's progress over the runs it makes, to call with each run's name: on a
    terminal a bar (counting the runs with the last one named, or with ``counting`` False
    naming each message as it comes, ``first`` until then), its clock moving between them;
    in a log a line every ``PLAIN_EVERY_S`` (``PlainLines``), through a long run too."""
    if sys.stderr.isatty():
        from tqdm import tqdm  # loaded only when a bar is drawn

        bar = tqdm(desc=first or label, unit="run" if counting else "it", leave=False)

        def show(what: str) -> None:
            if counting:
                bar.set_postfix_str(what)
                bar.update(1)
            else:
                bar.set_description(what)

        try:
            with Heartbeat(bar.refresh):
                yield show
        finally:
            bar.close()
    else:
        lines = PlainLines(label)
        with Heartbeat(lines.tick):
            yield lines
