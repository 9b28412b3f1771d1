"""The analytic engine: the bound as an answer, with the packet engine's tables."""

import numpy as np
import pytest

from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario

PRESET = load_preset("nextgen-4die")


@pytest.mark.parametrize(
    ("plan", "size", "config"),
    [
        ("allgather:direct:gpus=4", "256KB", "UA"),
        ("reducescatter:direct:gpus=4", "1MB", "NAP+NAR"),
        ("allreduce:ring:gpus=4:tbs=2", "64KB", "NUMA"),
    ],
)
def test_the_analytic_answer_is_the_bound_the_packet_run_respects(plan, size, config):
    built = builtin_plan(plan)
    packet = Scenario(PRESET, built, size, config, engine="packet").run()
    analytic = Scenario(PRESET, built, size, config, engine="analytic").run()
    assert analytic.engine == "analytic" and analytic.events == 0
    assert analytic.completion_ps == analytic.lower_bound_ps == packet.lower_bound_ps
    assert analytic.completion_ps <= packet.completion_ps
    assert (analytic.gpu_completion_ps <= packet.gpu_completion_ps).all()
    # The same data moves through the same resources: flits agree resource by resource.
    keys = ["kind", "gpu", "index"]
    flits = analytic.resources.set_index(keys)["flits"]
    assert flits.equals(packet.resources.set_index(keys)["flits"])
    assert (analytic.bytes_delivered, analytic.data_bytes_delivered) == (
        packet.bytes_delivered,
        packet.data_bytes_delivered,
    )
    np.testing.assert_array_equal(analytic.stack_bytes, packet.stack_bytes)
    # Zero-load store latencies: no packet store arrives sooner than its own.
    assert (
        analytic.stores["latency_ps"].to_numpy() <= packet.stores["latency_ps"].to_numpy()
    ).all()


def test_auto_never_answers_with_a_bound():
    scenario = Scenario(PRESET, builtin_plan("allgather:direct:gpus=4"), "4KB")
    assert scenario.chosen_engine == "packet"
