"""Messages: what the packet engine moves, one line or one flag each, as flat columns.

A message's kind is one of the mapping layer's access kinds (a local read, a remote load,
a local write, a remote store), or a flag: a one-line store to the flag page of the
threadblock it releases.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.kernel.kinds import FLAG, LOAD, READ, STORE, WRITE

__all__ = ["FLAG", "LOAD", "READ", "STORE", "WRITE", "Messages"]


class Messages(NamedTuple):
    """One row per message."""

    kind: np.ndarray  # READ, LOAD, WRITE, STORE or FLAG
    lineop: np.ndarray  # the line operation it belongs to; -1 for flags
    gpu: np.ndarray  # GPU of the CU that sends it
    cu: np.ndarray  # that CU, numbered over the pod
    router: np.ndarray  # that CU's router
    # flag: the step it releases; data-polled write or store: its arrival counter; else -1
    target: np.ndarray
    data_bytes: np.ndarray  # data the message carries (a wire line carries less than a line)
    memory_gpu: np.ndarray  # GPU of the memory it reads or writes
    address: np.ndarray  # line address there
    port: np.ndarray  # port it crosses sockets by, or -1
    stack: np.ndarray  # stack it reads or writes

    @property
    def size(self) -> int:
        """How many messages."""
        return len(self.kind)

    @staticmethod
    def concatenate(parts: list[Messages]) -> Messages:
        """The parts' messages one after another."""
        return Messages(*(np.concatenate(column) for column in zip(*parts, strict=True)))
