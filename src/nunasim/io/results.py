"""Result tables on disk: Parquet or CSV by the file's suffix, written whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nunasim.errors import ConfigError
from nunasim.io.files import write_atomically


def write_table(table: pd.DataFrame, path: str | Path) -> Path:
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".csv":
        return write_atomically(target, lambda tmp: table.to_csv(tmp, index=False))
    if suffix == ".parquet":
        return write_atomically(target, lambda tmp: table.to_parquet(tmp, index=False))
    raise ConfigError("a result table is written as .csv or .parquet", source=str(target))


def read_table(path: str | Path) -> pd.DataFrame:
    target = Path(path)
    if target.suffix.lower() == ".csv":
        return pd.read_csv(target)
    if target.suffix.lower() == ".parquet":
        return pd.read_parquet(target)
    raise ConfigError("a result table is read from .csv or .parquet", source=str(target))
