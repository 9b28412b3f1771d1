"""The paper's section 6 claims, each asserting the paper's direction (A beats B, a speedup
shrinks with size), on the paper's system (``nextgen-4die``) with each configuration at its
best-performing threadblock count, as the paper evaluates them (section 5.1).

docs/reproduction.md lists every claim with the paper's figure, ours and the command that
measures it. Runs are cached per process (``experiments.tbsearch``), so claims that share
an experiment share its runs.
"""

import dataclasses
from functools import cache

import pytest

from nunasim.collectives.builtins import builtin_plan
from nunasim.experiments.headline import paper_fig10_ns, run_headline
from nunasim.experiments.microbench import speedup_table
from nunasim.experiments.tbsearch import best_threadblocks
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario

PRESET = load_preset("nextgen-4die")
POD = PRESET.pod
EIGHT = ("UA", "UA+NAR", "NUMA", "NUMA+NAR", "NAP", "NAP+NAR", "NAP*", "NAP*+NAR")
KB100, MB1, MB10 = 100_000, 1_000_000, 10_000_000


@cache
def completion(collective: str, size: int, configs: tuple[str, ...] = EIGHT) -> dict[str, float]:
    """Completion ns of each configuration, 8 GPUs, best threadblock count."""
    table = speedup_table(PRESET, [collective], [size], [8], configs)
    return table.set_index("config")["completion_ns"].to_dict()


def speedup(collective: str, size: int, configs: tuple[str, ...] = EIGHT) -> dict[str, float]:
    times = completion(collective, size, configs)
    return {c: times["UA"] / t for c, t in times.items()}


# --- section 6.1, Fig. 9 ------------------------------------------------------------------


@pytest.mark.parametrize("size", [KB100, MB1])
def test_nap_nar_is_the_fastest_of_the_eight_configurations(size):
    """ "NAP+NAR is superior by reducing both local and remote latencies" (All-Gather)."""
    times = completion("allgather", size)
    assert min(times, key=times.get) == "NAP+NAR"


OTHER = ("UA", "UA+NAR", "NUMA+NAR", "NAP+NAR")


@pytest.mark.slow
@pytest.mark.parametrize("collective", ["allreduce", "alltoall"])
@pytest.mark.parametrize("size", [KB100, MB1])
def test_fig9_nar_and_numa_nar_help_other_collectives(collective, size):
    """NAR alone improves over UA, NUMA+NAR more, and NAP+NAR beats NAR alone."""
    s = speedup(collective, size, OTHER)
    assert s["NUMA+NAR"] >= s["UA+NAR"] > 1.0
    assert s["NAP+NAR"] > s["UA+NAR"]


NAP_NAR_A2A_1MB = pytest.mark.xfail(
    strict=True,
    reason="measured: All-to-All at 1 MB, NUMA+NAR 1.296x over UA against NAP+NAR 1.245x: "
    "NAP+NAR's stores are faster but queue at the few stacks, links and plane outputs its "
    "domains concentrate them on (docs/reproduction.md)",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "collective, size",
    [
        ("allreduce", KB100),
        ("allreduce", MB1),
        ("alltoall", KB100),
        pytest.param("alltoall", MB1, marks=NAP_NAR_A2A_1MB),
    ],
)
def test_fig9_nap_nar_is_best_on_other_collectives(collective, size):
    """ "NAP+NAR is superior by reducing both local and remote latencies.\""""
    times = completion(collective, size, OTHER)
    assert min(times, key=times.get) == "NAP+NAR"


NUMA_NAR_AT_1MB = pytest.mark.xfail(
    strict=True,
    reason="measured: UA+NAR 0.9% faster at 1 MB, where UA's round-robins over dies and over "
    "stacks align at 56 threadblocks and give UA the NUMA locality for free "
    "(docs/reproduction.md)",
)


NUMA_NAR_AT_10MB = pytest.mark.xfail(
    strict=True,
    reason="measured: UA+NAR 1.9% faster at 10 MB; Algorithm 1 packs NUMA's threadblocks "
    "onto the routers beside their stacks, and NAR does not relieve those routers' links "
    "(docs/reproduction.md)",
)


@pytest.mark.parametrize(
    "size",
    [
        KB100,
        pytest.param(MB1, marks=NUMA_NAR_AT_1MB),
        pytest.param(MB10, marks=[pytest.mark.slow, NUMA_NAR_AT_10MB]),
    ],
)
def test_numa_nar_is_at_least_ua_nar(size):
    """ "NUMA+NAR increases speedup by reducing local latencies to I/O ports"."""
    s = speedup("allgather", size)
    assert s["NUMA+NAR"] >= s["UA+NAR"]


# --- section 6.3, Fig. 11 -----------------------------------------------------------------


def nar_gains(size: int) -> dict[str, float]:
    times = completion("allgather", size)
    return {p: times[p] / times[f"{p}+NAR"] for p in ("UA", "NUMA", "NAP*", "NAP")}


NAP_STAR_NAR_AT_10MB = pytest.mark.xfail(
    strict=True,
    reason="measured: at 10 MB no granularity from 2 to 12 makes NAP*+NAR faster than NAP*: "
    "with UA's pages NAR shortens port -> stack (13.9 to 8.0 hops at 2 domains) but not CU -> "
    "port (13.0 to 13.5), and fine domains load the busiest port 2.7x the mean "
    "(docs/reproduction.md)",
)


@pytest.mark.parametrize(
    "size", [KB100, pytest.param(MB10, marks=[pytest.mark.slow, NAP_STAR_NAR_AT_10MB])]
)
def test_nar_improves_every_placement(size):
    """ "For all threadblock and memory placement schemes (UA, NUMA, NAP*, and NAP), NAR
    improves performance.\""""
    gains = nar_gains(size)
    assert all(g > 1.0 for g in gains.values()), gains


@pytest.mark.parametrize("size", [KB100, pytest.param(MB10, marks=pytest.mark.slow)])
def test_nar_helps_nap_most(size):
    """ "Among the different placement policies, NAR has the greatest impact on NAP.\""""
    gains = nar_gains(size)
    assert max(gains, key=gains.get) == "NAP"


def test_isolated_nap_is_not_beneficial():
    """ "Isolated NAP is not beneficial": threadblocks pushed outwards while the hash still
    spreads their stores over both ends."""
    assert speedup("allgather", KB100)["NAP"] < 1.0


@pytest.mark.slow
def test_placements_alone_slow_down_at_10mb():
    """ "For 10 MB collectives, placement policies (NUMA, NAP*, and NAP) alone without NAR
    introduce slowdowns.\""""
    s = speedup("allgather", MB10)
    assert s["NUMA"] < 1.0 and s["NAP*"] < 1.0 and s["NAP"] < 1.0


# --- section 6.4, Fig. 12 -----------------------------------------------------------------


@pytest.mark.slow
def test_nap_nar_speedup_shrinks_with_size():
    """ "NAP+NAR speedup benefits are greater when the collectives are small [...] as the
    collective size increases, the speedup diminishes.\""""
    s = [speedup("allgather", size)["NAP+NAR"] for size in (KB100, MB1, MB10)]
    assert s[0] >= s[1] >= s[2]
    assert s[0] > s[2]


@pytest.mark.slow
@pytest.mark.xfail(
    reason="measured: 1.32x at 100 MB against 1.18x at 10 MB (the packet engine on the same "
    "100 MB runs: 1.26x). With 50 GB/s ports the busiest mesh link, not a port, bounds both "
    "runs (1.5-1.8x the busiest port's busy time), and NAP+NAR relieves it; at half the port "
    "bandwidth the speedup shrinks, 1.10x to 1.06x (docs/reproduction.md, Fig. 12)",
    strict=False,
)
def test_nap_nar_speedup_keeps_shrinking_past_10mb():
    """The same claim on to 100 MB, where ``auto`` takes the flow engine."""
    pair = ("UA", "NAP+NAR")
    s = [speedup("allgather", size, pair)["NAP+NAR"] for size in (MB10, 10 * MB10)]
    assert s[0] >= s[1]


@cache
def flow_best(size: int, config: str, port_scale: float):
    """8-GPU All-Gather on the flow engine at its best count, ports scaled by ``port_scale``."""
    pod = dataclasses.replace(POD, port_bandwidth=POD.port_bandwidth * port_scale).fit(8)
    return best_threadblocks(pod, "allgather", size, config, gpus=8, engine="flow").result


@pytest.mark.slow
def test_at_100mb_the_mesh_not_the_network_bounds_both_runs():
    """Why the speedup stops shrinking past 10 MB on the paper's ports: the busiest mesh
    link is busier than the busiest port, under UA and under NAP+NAR, and the speedup
    follows the two busiest links' ratio."""
    ua, nap = (flow_best(10 * MB10, c, 1.0) for c in ("UA", "NAP+NAR"))
    for run in (ua, nap):
        assert run.busiest_ps("link") > 1.2 * run.busiest_ps("port")
    ratio = ua.busiest_ps("link") / nap.busiest_ps("link")
    assert ua.completion_ps / nap.completion_ps == pytest.approx(ratio, rel=0.05)


@pytest.mark.slow
def test_with_saturated_ports_the_speedup_shrinks_from_10mb_to_100mb():
    """The paper's mechanism (section 6.4): once the inter-GPU network saturates, queueing
    at its ports hides the NoC. With half the port bandwidth, the ports bound the runs and
    NAP+NAR's speedup over UA falls from 10 MB to 100 MB."""
    s = {}
    for size in (MB10, 10 * MB10):
        ua, nap = (flow_best(size, c, 0.5) for c in ("UA", "NAP+NAR"))
        s[size] = ua.completion_ps / nap.completion_ps
    ua_100mb = flow_best(10 * MB10, "UA", 0.5)
    assert ua_100mb.busiest_ps("port") > ua_100mb.busiest_ps("link")
    assert s[MB10] > s[10 * MB10] > 1.0


# --- section 6.5, Fig. 13 -----------------------------------------------------------------


@cache
def granularity_speedups(threadblocks: int) -> dict[int, float]:
    """1 MB All-Gather under NAP+NAR at 2-12 NAR domains, over baseline routing (NAP)."""
    plan = builtin_plan("allgather:direct:gpus=8", tbs=threadblocks)
    base = Scenario(POD, plan, MB1, "NAP").run().completion_ps
    return {
        g: base / Scenario(POD, plan, MB1, "NAP+NAR", g).run().completion_ps
        for g in (2, 4, 6, 8, 12)
    }


def test_too_few_threadblocks_for_fine_domains():
    """ "When there are too few threadblocks to distribute across many NAR domains, traffic
    becomes unequally routed, resulting in slowdowns": with 7 threadblocks per GPU the finest
    granularity is slower than the best coarser one."""
    s = granularity_speedups(7)
    assert s[12] < max(s[g] for g in (2, 4, 6, 8))


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="measured: 868 B chunks share 4 KiB pages across logical groups, so three quarters "
    "of the lines follow another domain's pages; with 1 KiB pages 8 and 12 domains lead "
    "within 1% (docs/reproduction.md)",
)
def test_enough_threadblocks_make_the_finest_domains_best():
    """ "When there are a sufficient number of threadblocks [1,008 per GPU] to enable
    effective load balancing, the configuration with the finest granularity (12 NAR
    domains) achieves the lowest latency" (section 6.5)."""
    s = granularity_speedups(1008)
    assert max(s, key=s.get) == 12


# --- section 6.2, Fig. 10 -----------------------------------------------------------------


@pytest.fixture(scope="module")
def headline():
    return run_headline(PRESET, "allgather:direct:gpus=8", MB1)


def test_fig10_means_within_ten_percent(headline):
    rows = headline.table.set_index("config")
    for config, (mean, _) in paper_fig10_ns().items():
        assert rows.loc[config, "store_mean_ns"] == pytest.approx(mean, rel=0.10)


def test_fig10_ua_tail_above_nap_nar(headline):
    rows = headline.table.set_index("config")
    assert rows.loc["UA", "store_max_ns"] > rows.loc["NAP+NAR", "store_max_ns"]
    assert rows.loc["UA", "store_mean_ns"] > rows.loc["NAP+NAR", "store_mean_ns"]
