"""Synthetic NoC traffic: destination patterns and Bernoulli injection, drawn up front.

Destinations (``W`` x ``H`` mesh, router ``(x, y)``):

- ``uniform``: uniformly one of the other ``W * H - 1`` routers, or of all ``W * H`` with
  self-traffic (a packet to its own router crosses the injection and ejection channels and
  no link);
- ``transpose``: ``((y * W) // H, (x * H) // W)``, which is ``(y, x)`` on a square mesh and
  always on the mesh. On a non-square mesh it is not a permutation: on 24 x 6 it is
  ``(4y, x // 4)``, 36 destinations each fed by up to four sources;
- ``bitcomp``: ``(W - 1 - x, H - 1 - y)``, the complement of every address bit on a
  power-of-two mesh (BookSim's ``bitcomp``) and its mirror image on any other;
- ``neighbor``: ``((x + 1) mod W, (y + 1) mod H)``, BookSim's ``neighbor`` (on a mesh the
  last column's and row's packets cross the whole mesh back);
- ``hotspot``: with probability ``hotspot_fraction`` one of the hotspot routers (chosen by
  weight among those other than the source), otherwise uniform as above; a source that is
  the only hotspot sends all its packets uniformly.

Routers a permutation pattern maps to themselves inject nothing, or, with self-traffic,
send to themselves (BookSim's permutations, whose averages count those packets).

Injection is Bernoulli: in every NoC cycle every router injects a packet with probability
``rate / packet_flits`` (``rate`` in flits per node per cycle) or ``rate`` (in packets). All
random numbers come from ``numpy.random.default_rng(seed)``, drawn ``_BLOCK_CYCLES`` cycles
at a time: one uniform number per (cycle, router) decides injection, and the destination is
drawn for every slot whether or not it injects, so that with one seed a higher rate injects a
superset of the packets of a lower one (common random numbers: a load sweep is smooth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nunasim.errors import ConfigError
from nunasim.hardware import Mesh

PERMUTATIONS = ("transpose", "bitcomp", "neighbor")
TRAFFIC_PATTERNS = ("uniform", *PERMUTATIONS, "hotspot")
RATE_UNITS = ("flits", "packets")

# Random numbers are drawn this many cycles at a time; part of what a seed means.
_BLOCK_CYCLES = 4096


@dataclass(frozen=True)
class Pattern:
    """Where packets go: a pattern name and its parameters."""

    traffic: str = "uniform"
    hotspot_fraction: float = 0.2
    # (router, weight) of every hotspot; empty: the mesh centre alone
    hotspots: tuple[tuple[int, float], ...] = ()
    # uniform destinations include the source itself; a permutation's fixed points inject
    self_traffic: bool = False

    def check(self, mesh: Mesh) -> None:
        if self.traffic not in TRAFFIC_PATTERNS:
            raise ConfigError(
                f"unknown traffic {self.traffic!r} (known: {', '.join(TRAFFIC_PATTERNS)})",
                where="traffic",
            )
        if not 0 <= self.hotspot_fraction <= 1:
            raise ConfigError(
                f"the hotspot fraction is a share in [0, 1]; got {self.hotspot_fraction}",
                where="hotspot_fraction",
            )
        for router, weight in self.hotspots:
            if not 0 <= router < mesh.routers:
                raise ConfigError(
                    f"router {router} is off the {mesh.width} x {mesh.height} mesh",
                    where="hotspot",
                )
            if not weight > 0:
                raise ConfigError(
                    f"a hotspot's weight must be positive; got {weight}", where="hotspot"
                )
        if len({router for router, _ in self.hotspots}) != len(self.hotspots):
            raise ConfigError("a router is named as a hotspot twice", where="hotspot")

    def hotspot_weights(self, mesh: Mesh) -> np.ndarray:
        """Every router's hotspot weight, summing to 1 (the centre alone by default)."""
        weights = np.zeros(mesh.routers)
        for router, weight in self.hotspots or ((centre(mesh), 1.0),):
            weights[router] = weight
        return weights / weights.sum()

    def describe(self, mesh: Mesh) -> str:
        """The pattern as the output states it."""
        if self.traffic == "hotspot":
            weights = self.hotspot_weights(mesh)
            spots = ", ".join(
                f"({mesh.coord(int(r))[0]}, {mesh.coord(int(r))[1]})"
                + ("" if len(self.hotspots) < 2 else f" x {weights[r]:.3g}")
                for r in np.nonzero(weights)[0]
            )
            rest = "; uniform rest with self-traffic" if self.self_traffic else ""
            return f"hotspot ({self.hotspot_fraction:g} to {spots}{rest})"
        if self.traffic in PERMUTATIONS and self.self_traffic:
            return f"{self.traffic} (fixed points send to themselves)"
        if self.traffic == "uniform":
            return (
                "uniform (with self-traffic)" if self.self_traffic else "uniform (no self-traffic)"
            )
        return self.traffic


def centre(mesh: Mesh) -> int:
    return mesh.router(mesh.width // 2, mesh.height // 2)


def permutation_destinations(mesh: Mesh, traffic: str) -> np.ndarray:
    """Destination router of every router under a permutation pattern."""
    routers = np.arange(mesh.routers, dtype=np.int64)
    w, h = mesh.width, mesh.height
    x, y = routers % w, routers // w
    if traffic == "transpose":
        tx, ty = (y * w) // h, (x * h) // w
    elif traffic == "bitcomp":
        tx, ty = w - 1 - x, h - 1 - y
    elif traffic == "neighbor":
        tx, ty = (x + 1) % w, (y + 1) % h
    else:
        raise ValueError(f"{traffic!r} is not a permutation pattern")
    return ty * w + tx


def transpose_destinations(mesh: Mesh) -> np.ndarray:
    """Destination router of every router under ``transpose``: (x, y) -> ((y * W) // H,
    (x * H) // W)."""
    return permutation_destinations(mesh, "transpose")


def _hotspot_choice(mesh: Mesh, pattern: Pattern) -> np.ndarray:
    """H[s, h]: the probability that a hotspot packet of source ``s`` goes to ``h`` (its
    row is zero when ``s`` is the only hotspot)."""
    weights = np.broadcast_to(pattern.hotspot_weights(mesh), (mesh.routers, mesh.routers)).copy()
    np.fill_diagonal(weights, 0.0)
    total = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)


def destination_matrix(mesh: Mesh, pattern: Pattern) -> np.ndarray:
    """P[s, d]: the probability that a packet injected at ``s`` goes to ``d`` (a row is zero
    for a router that injects nothing)."""
    n = mesh.routers
    if pattern.self_traffic:
        uniform = np.full((n, n), 1.0 / n)
    else:
        uniform = np.full((n, n), 1.0 / (n - 1))
        np.fill_diagonal(uniform, 0.0)
    if pattern.traffic == "uniform":
        return uniform
    if pattern.traffic in PERMUTATIONS:
        matrix = np.zeros((n, n))
        matrix[np.arange(n), permutation_destinations(mesh, pattern.traffic)] = 1.0
        if not pattern.self_traffic:
            np.fill_diagonal(matrix, 0.0)
        return matrix
    choice = _hotspot_choice(mesh, pattern)
    lone = choice.sum(axis=1) == 0  # the only hotspot: all uniform
    fraction = np.where(lone, 0.0, pattern.hotspot_fraction)[:, None]
    return (1.0 - fraction) * uniform + fraction * choice


@dataclass(frozen=True, eq=False)
class Traffic:
    """Every packet of a run, in injection order (cycle, then router)."""

    cycle: np.ndarray  # int64 injection cycle
    src: np.ndarray  # int64 router
    dst: np.ndarray  # int64 router


def injection_probability(rate: float, rate_unit: str, packet_flits: int) -> float:
    """A router's chance of injecting a packet in one cycle."""
    return rate / packet_flits if rate_unit == "flits" else rate


def generate_traffic(
    mesh: Mesh, pattern: Pattern, probability: float, horizon: int, seed: int
) -> Traffic:
    """Packets injected in cycles ``0 .. horizon - 1`` (see the module's docstring)."""
    n = mesh.routers
    rng = np.random.default_rng(seed)
    sources = np.arange(n, dtype=np.int64)
    permuted = (
        permutation_destinations(mesh, pattern.traffic)
        if pattern.traffic in PERMUTATIONS
        else sources
    )
    choice = _hotspot_choice(mesh, pattern) if pattern.traffic == "hotspot" else None
    cycles, srcs, dsts = [], [], []
    for first in range(0, horizon, _BLOCK_CYCLES):
        rows = min(_BLOCK_CYCLES, horizon - first)
        inject = rng.random((rows, n)) < probability
        src = np.broadcast_to(sources, (rows, n))
        if pattern.traffic in PERMUTATIONS:
            dst = np.broadcast_to(permuted, (rows, n))
            if not pattern.self_traffic:
                inject &= dst != src
        else:
            if pattern.self_traffic:
                dst = rng.integers(0, n, size=(rows, n), dtype=np.int64)
            else:
                pick = rng.integers(0, n - 1, size=(rows, n), dtype=np.int64)
                dst = pick + (pick >= src)
            if choice is not None:
                dst = _hotspot_destinations(rng, choice, src, dst, pattern.hotspot_fraction)
        # The injecting slots in order (cycle, then router), found once: a boolean mask
        # applied to each array costs six times as much.
        flat = np.flatnonzero(inject)
        row, col = np.divmod(flat, n)
        row += first
        cycles.append(row)
        srcs.append(col)
        dsts.append(np.take(dst, flat))
    return Traffic(
        cycle=np.concatenate(cycles) if cycles else np.zeros(0, dtype=np.int64),
        src=np.concatenate(srcs).astype(np.int64, copy=False) if srcs else np.zeros(0, np.int64),
        dst=np.concatenate(dsts).astype(np.int64, copy=False) if dsts else np.zeros(0, np.int64),
    )


def _hotspot_destinations(
    rng: np.random.Generator,
    choice: np.ndarray,
    src: np.ndarray,
    uniform: np.ndarray,
    fraction: float,
) -> np.ndarray:
    """Replace a ``fraction`` of the uniform destinations by hotspots drawn from ``choice``."""
    has_other = choice.sum(axis=1) > 0
    to_hot = (rng.random(src.shape) < fraction) & has_other[src]
    spots = np.nonzero(choice.any(axis=0))[0]
    if len(spots) == 1:  # one hotspot: no draw for which
        return np.where(to_hot, spots[0], uniform)
    cumulative = np.cumsum(choice[:, spots], axis=1)
    u = rng.random(src.shape)
    pick = (u[..., None] >= cumulative[src]).sum(axis=-1)
    return np.where(to_hot, spots[np.minimum(pick, len(spots) - 1)], uniform)


def as_pattern(
    traffic: str | Pattern, hotspot_fraction: float = 0.2, hotspot: int | None = None
) -> Pattern:
    """A ``Pattern`` from the short form (one hotspot router, or the centre)."""
    if isinstance(traffic, Pattern):
        return traffic
    hotspots = () if hotspot is None else ((int(hotspot), 1.0),)
    return Pattern(traffic, hotspot_fraction, hotspots)
