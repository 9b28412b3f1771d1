"""Any preset whose numbers pass validation runs a small collective without an internal
error: each of the monolithic preset's quantities set to a value anywhere from 1e-40 to
1e40 of its unit is either refused where it is written, with its element, or
taken, and then a 2-GPU All-Gather on it runs, or is refused, with a located error."""

from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.errors import NunasimError
from nunasim.io.presets import parse_preset
from nunasim.scenario import Scenario

PRESET = Path(__file__).parents[1] / "src" / "nunasim" / "hardware" / "presets" / "monolithic.yaml"

# (what the shipped file says, how a new value is written)
FIELDS = [
    ("clock: 1.2GHz", "clock: {}GHz"),
    ("cycles_per_hop: 10", "cycles_per_hop: {}"),
    ("outstanding_requests: 700", "outstanding_requests: {}"),
    ("l1_latency: 120ns", "l1_latency: {}ns"),
    ("bisection_bandwidth: 10TB/s", "bisection_bandwidth: {}TB/s"),
    ("bandwidth: 2.5TB/s", "bandwidth: {}TB/s"),
    ("latency: 150ns", "latency: {}ns"),
    ("plane_latency: 500ns", "plane_latency: {}ns"),
    ("port_bandwidth: 50GB/s", "port_bandwidth: {}GB/s"),
    ("cus_per_router: 4", "cus_per_router: {}"),
    ("bf16: 6.25PFLOPS", "bf16: {}PFLOPS"),
    ("{line: 256B, page: 4KiB", "{{line: {}B, page: 4KiB"),
]

numbers = st.one_of(
    st.builds(lambda m, e: f"{m}e{e}", st.integers(1, 9), st.integers(-40, 40)),
    st.integers(0, 10**30).map(str),
    st.sampled_from(["0", "1", "0.5", "1e-3", "3"]),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(FIELDS), numbers),
        min_size=1,
        max_size=3,
        unique_by=lambda c: c[0],
    )
)
def test_a_preset_that_passes_validation_runs_a_small_collective(changes):
    text = PRESET.read_text()
    for (old, new), value in changes:
        assert old in text
        text = text.replace(old, new.format(value), 1)
    try:
        preset = parse_preset(text, "changed.yaml")
    except NunasimError as exc:
        assert str(exc).startswith("changed.yaml: "), exc
        event("refused when read")
        return
    plan = builtin_plan("allgather", gpus=2, tbs=1)
    for configuration in ("UA", "NAP+NAR"):
        try:
            result = Scenario(preset, plan, "4kB", configuration).run()
        except NunasimError:
            event("run refused")
            continue  # refused with its reason (a run beyond the engines' time range, say)
        event("ran")
        assert result.completion_ps > 0
        assert result.lower_bound_ps <= result.completion_ps
