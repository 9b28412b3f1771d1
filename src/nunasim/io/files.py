"""Writing output files whole or not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from nunasim.errors import ConfigError


def write_atomically(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write`` on a temporary file beside ``path``, then move it into place.

    A failure in ``write`` leaves no file behind (and an existing ``path`` untouched).
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ConfigError("the folder to write into does not exist", source=str(target))
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=target.suffix, dir=folder
    )
    os.close(handle)
    try:
        write(Path(temporary))
        # mkstemp makes the file private; give it the mode any new file would get.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def read_text(path: str | Path) -> str:
    """The text of a UTF-8 file, or a ConfigError that names it and says why not."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", source=str(path)) from None
