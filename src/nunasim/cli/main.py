"""The ``nunasim`` command group. Each subcommand lives in a module of its own and is
imported only when it runs, so that a command pays only for the libraries it uses."""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from nunasim import __version__
from nunasim.errors import NunasimError, NunasimWarning

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C

COMMANDS = {
    "preset": "nunasim.cli.preset:preset",
    "floorplan": "nunasim.cli.floorplan:floorplan",
    "plan": "nunasim.cli.plan:plan",
    "place": "nunasim.cli.place:place_command",
    "simulate": "nunasim.cli.simulate:simulate_command",
    "headline": "nunasim.cli.headline:headline_command",
    "fig9": "nunasim.cli.fig9:fig9_command",
    "noc": "nunasim.cli.noc:noc_command",
    "llm": "nunasim.cli.llm:llm_command",
    "trace": "nunasim.cli.trace:trace",
    "reproduce": "nunasim.cli.reproduce:reproduce_command",
    "report": "nunasim.cli.report:report_command",
    "tune": "nunasim.cli.tune:tune_command",
    "cache": "nunasim.cli.cache:cache_group",
    "calibrate": "nunasim.cli.calibrate:calibrate_command",
}

# Commands that run without the cyclic garbage collector when they are all the process does.
# A run's plan, placement and lowering are hundreds of thousands of Python objects that
# live until it ends, and they set off full collections that walk all of them and find
# nothing to free: on a 64-GPU All-Gather of 16,128 threadblocks, five collections took
# 1.1 s and freed 371 objects. Reference counting still frees everything else at once.
UNCOLLECTED = frozenset({"simulate", "noc"})

# Commands that ask numpy for no transparent huge pages (unless the environment says
# otherwise): numpy asks the kernel for them for every array of 4 MB or more, and a kernel
# that must first compact memory to find one does so while the page is first touched. A
# `noc` run writes some 500 MB of per-packet arrays once each; with huge pages its system
# time varied from 0.15 to 1.0 s between identical runs (0.6-0.8 s right after another
# simulator's run), without them 0.27-0.36 s (docs/noc.md, "Speed").
SMALL_PAGES = frozenset({"noc"})


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        if name in SMALL_PAGES and "numpy" not in sys.modules:  # numpy reads it on import
            os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
        command = getattr(importlib.import_module(module), attribute)
        if isinstance(ctx.obj, Session) and ctx.obj.whole_process:
            # What the imports made (numba's and pandas' objects among them) lives as long
            # as the process: set it aside, so that the collector's full passes, which a
            # large plan's hundreds of thousands of objects set off, do not walk it again.
            gc.freeze()
            if name in UNCOLLECTED:
                gc.disable()
        return command


Handler = Callable[[int, Any], None] | int | None  # as signal.signal takes and returns


# A signal Python dropped in a callback from C is sent again this long after: time for the
# callback to return (``_redeliver_interruptions``), little beside a run's length.
RESEND_AFTER_S = 0.05


class Terminated(BaseException):
    """A termination signal (SIGTERM), raised where the program is, so that it ends as
    Ctrl-C does: temporary files removed, no output half-written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@dataclass
class Session:
    """What the group's options set for the command's run."""

    debug: bool = False
    whole_process: bool = False  # the command is all the process does (not a call from Python)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nunasim")
@click.option("--debug", is_flag=True, help="Show the traceback of any error.")
@click.pass_obj
def cli(session: Session, debug: bool) -> None:
    """Simulate collectives on pods of multi-die GPUs and measure non-uniform network
    access (NUNA), with NUNA-aware routing (NAR) and placement (NAP)."""
    session.debug = debug


def main(argv: list[str] | None = None) -> int:
    """Run the command. Bad input ends with a one-line message and exit status 2, an
    interruption (Ctrl-C, SIGTERM) with 128 + the signal's number, anything unexpected
    with a one-line message and exit status 1; ``--debug`` adds the traceback."""
    session = Session(whole_process=argv is None)
    if sys.stdout is None:  # started with stdout closed (>&-): click would print nothing
        message = "error: standard output is closed (>/dev/null discards it)"
        return _fail(session, message, EXIT_BAD_INPUT)
    previous = _on_termination(_raise_terminated)
    unraisable = sys.unraisablehook
    sys.unraisablehook = _redeliver_interruptions(unraisable)
    shown = warnings.showwarning
    warnings.showwarning = _show_warning(shown)
    try:
        cli.main(args=argv, prog_name="nunasim", standalone_mode=False, obj=session)
        sys.stdout.flush()  # here, so that a full stdout fails as any write to it does
    except NunasimError as exc:
        return _fail(session, f"error: {exc}", EXIT_BAD_INPUT)
    except click.exceptions.Abort:
        return _fail(session, "aborted", EXIT_INTERRUPTED)
    except Terminated as exc:
        return _fail(session, "terminated", 128 + exc.signum)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except MemoryError:
        return _fail(
            session,
            "error: out of memory: use a smaller size or fewer GPUs, or a smaller "
            "--max-memory so that runs this large are refused before they start",
            EXIT_INTERNAL,
        )
    except Exception as exc:
        # Output files and inputs turn their OSErrors into located errors: one of these
        # that reaches here is standard output's (full, or its reader gone).
        if isinstance(exc, OSError) and exc.errno in _OUTPUT_ERRNOS:
            return _output_failed(session, exc)
        return _fail(
            session,
            f"internal error: {type(exc).__name__}: {str(exc)[:300]} (rerun with "
            "--debug for the traceback)",
            EXIT_INTERNAL,
        )
    finally:
        _on_termination(previous)
        sys.unraisablehook = unraisable
        warnings.showwarning = shown
    return 0


def _show_warning(otherwise: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` that prints the package's own warnings as one line each."""

    def show(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
        if issubclass(category, NunasimWarning):
            click.echo(f"nunasim: warning: {message}", err=True)
        else:
            otherwise(message, category, *args, **kw)

    return show


_OUTPUT_ERRNOS = {errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG}


def _output_failed(session: Session, exc: OSError) -> int:
    # What is still buffered would fail again when Python flushes it at exit.
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if exc.errno == errno.EPIPE:  # `nunasim ... | head`: the reader has all it wanted
        return 128 + signal.SIGPIPE
    return _fail(session, f"error: cannot write standard output: {exc.strerror}", EXIT_BAD_INPUT)


def _fail(session: Session, message: str, status: int) -> int:
    if session.debug:
        traceback.print_exc()
    click.echo(f"nunasim: {message}", err=True)
    return status


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _redeliver_interruptions(
    otherwise: Callable[[Any], None],
) -> Callable[[Any], None]:
    """``sys.unraisablehook`` that gives back a Ctrl-C or SIGTERM Python had to drop. A
    signal's exception raised while Python runs a callback from C (numba loads its compiled
    code through one) cannot leave it: Python prints it as "ignored" and the callback's
    caller goes on, so the run would finish as if never signalled. The signal is sent again
    instead, ``RESEND_AFTER_S`` later from another thread: sent at once, its handler would
    run (and raise) inside this hook, where the exception is dropped too. Should it land in
    another callback, this happens again."""

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, Terminated):
            _send_later(exc.signum)
        elif isinstance(exc, KeyboardInterrupt):
            _send_later(signal.SIGINT)
        else:
            otherwise(unraisable)

    return hook


def _send_later(signum: int) -> None:
    def send() -> None:
        time.sleep(RESEND_AFTER_S)
        os.kill(os.getpid(), signum)

    threading.Thread(target=send, daemon=True).start()


def _on_termination(handler: Handler) -> Handler:
    """Install ``handler`` for SIGTERM (from the main thread only); the one it replaces."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, handler) if handler is not None else None


if __name__ == "__main__":
    sys.exit(main())
