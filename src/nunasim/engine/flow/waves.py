"""Taking the flows of a wave out of the active set, in the order a scan would.

The loop used to scan ``active`` in order at every wave, taking out each flow due by the
wave's end and moving the last active flow into its place (looked at next). That order
decides the order of the flows' events and their places in ``active``, and so the order
of the sums in the next rate computation: ties depend on it. ``leave`` gives the same
order and arrangement from the positions of the leaving flows alone, so a wave costs its
own flows rather than a pass over every active flow.
"""

from __future__ import annotations

from nunasim.engine.jit import jit


@jit
def leave(active, nactive, position, leaving, wave, nwave, order):
    """The flows at positions ``wave[:nwave]`` leave ``active[:nactive]``: writes them to
    ``order`` in the order the scan takes them, rearranges ``active`` (and ``position``,
    each flow's place in it) as the scan does, and returns the new active count.
    ``leaving`` marks the leaving flows (by flow id); it is cleared."""
    wave[:nwave].sort()
    taken = 0
    for k in range(nwave):
        j = wave[k]
        if j >= nactive:  # the rest were moved into earlier gaps and have left
            break
        while True:
            f = active[j]
            order[taken] = f
            taken += 1
            leaving[f] = False
            nactive -= 1
            active[j] = active[nactive]
            position[active[j]] = j
            if j >= nactive or not leaving[active[j]]:
                break
    return nactive
