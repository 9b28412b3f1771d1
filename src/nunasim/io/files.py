"""Writing output files whole or not at all."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from nunasim.errors import ConfigError

# The largest input file read: the largest MSCCL++ plans are a few megabytes.
MAX_INPUT_BYTES = 64 << 20


def check_output(path: str | Path, suffixes: tuple[str, ...], what: str) -> Path:
    """Refuse, before any work is done, an output path nunasim could not write at the end:
    a suffix it does not write, a folder that does not exist or is not writable, or a
    folder in the file's place."""
    target = Path(path)
    if target.suffix.lower() not in suffixes:
        kinds = " or ".join(filter(None, (", ".join(suffixes[:-1]), suffixes[-1])))
        raise ConfigError(f"{what} is written as {kinds}", source=str(target))
    _check_folder(target.parent if str(target.parent) else Path("."), str(target))
    if target.is_dir():
        raise ConfigError("is a folder, not a file", source=str(target))
    return target


def check_output_folder(folder: str | Path) -> Path:
    """Refuse a folder nunasim could not write into (one it may create must have a
    writable parent)."""
    target = Path(folder)
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ConfigError("is a file, not a folder", source=str(existing))
    _check_folder(existing, str(target))
    return target


def _check_folder(folder: Path, source: str) -> None:
    if not folder.is_dir():
        raise ConfigError("the folder to write into does not exist", source=source)
    # Only creating a file proves a folder writable (permissions alone do not: /proc, a
    # read-only mount, a full disk).
    # An anonymous file (O_TMPFILE on Linux) leaves nothing behind even if the process is
    # killed while it exists.
    try:
        with tempfile.TemporaryFile(prefix=".nunasim-probe.", dir=folder):
            pass
    except OSError as exc:
        raise ConfigError(f"cannot write into its folder: {exc.strerror}", source=source) from None


def write_atomically(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write`` on a temporary file beside ``path``, then move it into place.

    A failure in ``write`` leaves no file behind (and an existing ``path`` untouched).
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ConfigError("the folder to write into does not exist", source=str(target))
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=target.suffix, dir=folder
        )
    except OSError as exc:
        raise ConfigError(f"cannot write: {exc.strerror}", source=str(target)) from None
    try:
        os.close(handle)
        write(Path(temporary))
        # mkstemp makes the file private; give it the mode any new file would get.
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except OSError as exc:  # a full disk, a target that became a folder
        Path(temporary).unlink(missing_ok=True)
        raise ConfigError(f"cannot write: {exc.strerror}", source=str(target)) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


@contextmanager
def output_folder(folder: str | Path) -> Iterator[Path]:
    """The folder to write a command's files into. A folder that does not exist yet is
    made under a temporary name beside it and renamed into place once everything in it is
    written, so that an interrupted or failed command leaves no folder half-filled (files
    written into an existing folder are each replaced whole, ``write_atomically``)."""
    target = Path(folder)
    if target.is_dir():
        yield target
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as exc:
        raise ConfigError(f"cannot create: {exc.strerror}", source=str(target)) from None
    try:
        yield staging
        os.chmod(staging, 0o777 & ~_umask())
        os.rename(staging, target)
    except OSError as exc:  # the folder appeared meanwhile, a full disk
        shutil.rmtree(staging, ignore_errors=True)
        raise ConfigError(f"cannot create: {exc.strerror}", source=str(target)) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def read_text(path: str | Path) -> str:
    """The text of a UTF-8 file, or a ConfigError that names it and says why not: no such
    file, a folder, a file larger than any input nunasim reads, not UTF-8 text."""
    source = Path(path)
    if source.is_dir():
        raise ConfigError("is a folder, not a file", source=str(path))
    try:
        with source.open("rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    if len(data) > MAX_INPUT_BYTES:
        raise ConfigError(
            f"is larger than {MAX_INPUT_BYTES >> 20} MiB, more than any preset or plan needs",
            source=str(path),
        )
    return decode_text(data, str(path))


def decode_text(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text, or a ConfigError naming ``source`` and the first bad byte."""
    try:
        return data.decode("utf-8-sig")  # a byte-order mark is allowed
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"is not UTF-8 text (byte {exc.start} is {data[exc.start : exc.start + 1]!r}): "
            "save it as UTF-8",
            source=source,
        ) from None


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a regular file of at most ``MAX_INPUT_BYTES``, read without blocking
    on a FIFO or a device; or a ConfigError that names it and says why not."""
    source = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", source=source) from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError("is a folder, not a file", source=source)
        if not stat.S_ISREG(mode):
            # A FIFO would block for ever, a device (/dev/zero) never end.
            raise ConfigError("is not a regular file", source=source)
        try:
            data = handle.read(MAX_INPUT_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror or exc}", source=source) from None
    if len(data) > MAX_INPUT_BYTES:
        raise ConfigError(f"is larger than {MAX_INPUT_BYTES >> 20} MiB", source=source)
    return data


def gunzip(data: bytes, source: str) -> bytes:
    """Every member of a gzip stream, inflated to at most ``MAX_INPUT_BYTES`` (a few MB of
    zeros inflate to gigabytes)."""
    out = bytearray()
    rest = data
    while rest:
        inflate = zlib.decompressobj(wbits=31)
        try:
            out += inflate.decompress(rest, MAX_INPUT_BYTES + 1 - len(out))
        except zlib.error as exc:
            raise ConfigError(f"not a readable gzip file: {exc}", source=source) from None
        if len(out) > MAX_INPUT_BYTES or inflate.unconsumed_tail:
            raise ConfigError(f"inflates to more than {MAX_INPUT_BYTES >> 20} MiB", source=source)
        if not inflate.eof:
            raise ConfigError("not a readable gzip file: truncated", source=source)
        rest = inflate.unused_data
    return bytes(out)
