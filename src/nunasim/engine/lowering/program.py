"""A lowered program in parts: threadblocks, steps, line operations and messages, each
part numbered after the parts before it, so that parts join by concatenation."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.lowering.messages import Messages


class Program(NamedTuple):
    """What the threadblocks of one part of a scenario do."""

    tb_cu: np.ndarray  # CU of each threadblock, numbered over the pod
    tb_gpu: np.ndarray
    step_tb: np.ndarray
    step_wait: np.ndarray  # waits before a step may start (program order, deps, flags)
    step_compute_ps: np.ndarray  # compute time of a step that only computes
    step_background: np.ndarray  # True for steps of background work (a GEMM)
    step_lineops: np.ndarray  # line operations of each step
    step_flags: np.ndarray  # flag messages each step sends on completion
    succ: list[list[int]]  # per step: steps whose waits its completion satisfies
    lineop_step: np.ndarray
    lineop_compute_ps: np.ndarray  # reduction time of one line
    lineop_msgs: np.ndarray  # [line op, 3]: first source, first sink, end (message ids)
    flag_msg: np.ndarray  # the flag messages, step by step
    messages: Messages
    arrival_lines: np.ndarray  # per arrival counter (a data-polled transfer): its lines
    releases: list[list[int]]  # per arrival counter: the steps its last line releases

    def next_numbers(self) -> tuple[int, int, int, int]:
        """The numbers of the next part's first threadblock, step, line op and message."""
        return len(self.tb_cu), len(self.step_tb), len(self.lineop_step), self.messages.size


def join(parts: list[Program]) -> Program:
    """The parts one after another."""
    if len(parts) == 1:
        return parts[0]  # a copy of every column would only cost memory
    columns = []
    for column in zip(*parts, strict=True):
        if isinstance(column[0], Messages):
            columns.append(Messages.concatenate(list(column)))
        elif isinstance(column[0], list):
            columns.append([x for part in column for x in part])
        else:
            columns.append(np.concatenate(column))
    return Program(*columns)
