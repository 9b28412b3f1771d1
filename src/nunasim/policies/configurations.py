"""The configurations: the placement policies, by name, each with and without NAR routing.

A placement policy is a threadblock policy (``UA`` dispatch, ``NUMA`` scheduling or
``NAP``'s Algorithm 1) with a page policy (``UA``: round-robin over the stacks, or
``NAP``'s); ``PLACEMENT_POLICIES`` holds them, and each gives two configurations,
``name`` and ``name+NAR`` (routing stores over their NAR domain's ports). A policy
registered with ``register_placement`` joins every command that lists the configurations;
the paper's figures run ``PAPER_CONFIGURATIONS``, named one by one, and never grow.
"""

from __future__ import annotations

from nunasim.errors import ConfigError
from nunasim.mapping.placement import PlacementRule

NAR = "+NAR"  # the suffix of a configuration name that routes over NAR domains
THREADBLOCK_POLICIES = ("UA", "NUMA", "NAP")
PAGE_POLICIES = ("UA", "NAP")

# By name: (threadblock policy, page policy). Filled by ``register_placement``.
PLACEMENT_POLICIES: dict[str, tuple[str, str]] = {}
# By name (``"NAP+NAR"``): what the configuration does, two per placement policy.
CONFIGURATIONS: dict[str, PlacementRule] = {}


def register_placement(name: str, threadblocks: str, pages: str) -> None:
    """Add the placement policy ``name`` and its two configurations."""
    if name in PLACEMENT_POLICIES or not name or name.endswith(NAR):
        raise ConfigError(f"a placement policy cannot be called {name!r}")
    if threadblocks not in THREADBLOCK_POLICIES or pages not in PAGE_POLICIES:
        raise ConfigError(
            f"placement {name!r}: threadblocks by {threadblocks!r} and pages by {pages!r}; "
            f"known: threadblocks {', '.join(THREADBLOCK_POLICIES)}, pages "
            f"{', '.join(PAGE_POLICIES)}"
        )
    PLACEMENT_POLICIES[name] = (threadblocks, pages)
    for nar in (False, True):
        full = name + (NAR if nar else "")
        CONFIGURATIONS[full] = PlacementRule(full, threadblocks, pages, nar)


for _name, _threadblocks, _pages in (
    ("UA", "UA", "UA"),
    ("NUMA", "NUMA", "UA"),
    ("NAP", "NAP", "NAP"),
    ("NAP*", "NAP", "UA"),  # the paper's NAP*: NAP's threadblocks, pages as UA places them
):
    register_placement(_name, _threadblocks, _pages)

# The paper's eight configurations (its sections 5.3 and 6.3), in its order: the figures
# that reproduce it run these, named one by one, so a configuration added above joins the
# commands that list every configuration but never silently grows a paper figure.
PAPER_CONFIGURATIONS = ("UA", "UA+NAR", "NUMA", "NUMA+NAR", "NAP", "NAP+NAR", "NAP*", "NAP*+NAR")


def configuration(name: str) -> PlacementRule:
    """What the configuration called ``name`` does; an unknown name is a ConfigError."""
    try:
        return CONFIGURATIONS[name]
    except KeyError:
        known = ", ".join(CONFIGURATIONS)
        raise ConfigError(f"unknown configuration {name!r} (known: {known})") from None


def uses_domains(config: PlacementRule) -> bool:
    """Whether a granularity changes anything: NAR routing, or NAP's domains."""
    return config.nar or config.threadblocks == "NAP"
