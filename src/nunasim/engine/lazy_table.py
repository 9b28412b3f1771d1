"""A result table kept as numpy columns until someone asks for it as a DataFrame.

Loading pandas takes about half a second, more than a small run; ``nunasim simulate
--json`` reads a few means and percentiles of its tables and never needs one, so a run
keeps its tables as the columns they are built from, and the first read of the attribute
builds the DataFrame (and keeps it: later reads see the same object, and changes to it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

Columns = dict[str, np.ndarray]  # every column the same length


class LazyTable:
    """A dataclass field's descriptor: set to a DataFrame or to ``Columns``; read as a
    DataFrame. ``column`` and ``rows`` read the columns without building one."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}_table"

    def __get__(self, instance: object, owner: type | None = None) -> pd.DataFrame:
        if instance is None:
            # The dataclass asks the class for the field's default: it has none.
            raise AttributeError(self.slot)
        table = instance.__dict__[self.slot]
        if isinstance(table, dict):
            import pandas as pd

            table = pd.DataFrame(table)
            instance.__dict__[self.slot] = table
        return table

    def __set__(self, instance: object, value: Any) -> None:
        instance.__dict__[self.slot] = value

    def column(self, instance: object, name: str) -> np.ndarray:
        """Column ``name`` as a numpy array."""
        table = instance.__dict__[self.slot]
        return table[name] if isinstance(table, dict) else table[name].to_numpy()

    def has(self, instance: object, name: str) -> bool:
        """Whether the table has a column ``name``."""
        return name in instance.__dict__[self.slot]

    def rows(self, instance: object) -> int:
        table = instance.__dict__[self.slot]
        if isinstance(table, dict):
            return len(next(iter(table.values()))) if table else 0
        return len(table)
