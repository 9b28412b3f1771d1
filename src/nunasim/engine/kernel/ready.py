"""Step readiness, as both event loops and the analytic bound start from it."""

from __future__ import annotations

from nunasim.engine.jit import jit


@jit
def any_unfinished(step_end):
    """Whether a step has not ended (its end is still -1). A loop, not an array expression:
    the packet core allocates nothing (``nunasim.engine.packet.state``)."""
    for s in range(step_end.shape[0]):  # noqa: SIM110 (numba compiles no generator)
        if step_end[s] < 0:
            return True
    return False


@jit(inline=True)
def initially_ready(wait, ready):
    """The steps with nothing to wait for, into ``ready``; returns how many."""
    count = 0
    for s in range(wait.shape[0]):
        if wait[s] == 0:
            ready[count] = s
            count += 1
    return count


@jit(inline=True)
def satisfy(w, wait, ready, count):
    """One of step ``w``'s waits is over: it joins ``ready`` (``count`` long) once none is
    left; returns the new count."""
    wait[w] -= 1
    if wait[w] == 0:
        ready[count] = w
        count += 1
    return count
