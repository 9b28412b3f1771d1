"""Result tables on disk: Parquet or CSV by the file's suffix, written whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nunasim.errors import ConfigError
from nunasim.io.files import check_output, write_atomically

if TYPE_CHECKING:
    import pandas as pd

TABLE_SUFFIXES = (".csv", ".parquet")


def check_table_path(path: str | Path) -> Path:
    """Refuse a table path ``write_table`` could not write, before the run that fills it."""
    return check_output(path, TABLE_SUFFIXES, "a result table")


def write_table(table: pd.DataFrame, path: str | Path) -> Path:
    target = check_table_path(path)
    suffix = target.suffix.lower()
    if suffix == ".csv":
        return write_atomically(target, lambda tmp: table.to_csv(tmp, index=False))
    if suffix == ".parquet":
        return write_atomically(target, lambda tmp: table.to_parquet(tmp, index=False))
    raise ConfigError("a result table is written as .csv or .parquet", source=str(target))


def read_table(path: str | Path) -> pd.DataFrame:
    import pandas as pd  # slow to load, and only reading needs it here

    target = Path(path)
    if target.suffix.lower() == ".csv":
        return pd.read_csv(target)
    if target.suffix.lower() == ".parquet":
        return pd.read_parquet(target)
    raise ConfigError("a result table is read from .csv or .parquet", source=str(target))
