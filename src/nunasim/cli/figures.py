"""Writing figures from the command line: checked suffix, whole file or none."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nunasim.io.files import check_output, write_atomically

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def check_figure_path(path: Path | None) -> None:
    """Refuse, before the run, a picture path that could not be written."""
    if path is not None:
        check_output(path, FIGURE_SUFFIXES, "a picture")


def save_figure(figure: Figure, path: Path) -> None:
    check_figure_path(path)
    fmt = path.suffix.lower().lstrip(".")
    write_atomically(path, lambda tmp: figure.savefig(tmp, dpi=150, format=fmt))
