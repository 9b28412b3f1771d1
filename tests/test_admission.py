"""Admission: the message count is exact, the budget comes from the right place, and a run
is refused exactly when its memory estimate exceeds the budget."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.lowering.admission import (
    MEMORY_ENV,
    Budget,
    admit,
    available_memory,
    buffer_pages,
    limit_memory,
    memory_budget,
    packet_bytes,
    packet_messages,
)
from nunasim.engine.lowering.lower import lower
from nunasim.errors import ConfigError
from nunasim.experiments.tbsearch import candidate_counts
from nunasim.io.msccl import parse_msccl_xml
from nunasim.io.presets import load_preset
from nunasim.policies.place import place
from strategies import BUILTIN_ALGORITHMS

POD = load_preset("nextgen-4die").pod
LINE = POD.socket.line_bytes


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from(BUILTIN_ALGORITHMS),
    st.integers(2, 4),
    st.integers(1, 3),
    st.sampled_from(["Simple", "LL", "LL128", "packet"]),
    st.integers(1, 200_000),
)
def test_the_count_is_the_messages_lowering_makes(algorithm, gpus, tbs, protocol, size):
    plan = builtin_plan(f"{algorithm}:gpus={gpus}:tbs={tbs}:proto={protocol}")
    placement = place(plan, size, POD, "UA")
    expected = packet_messages(plan, placement.chunk_bytes, LINE)
    assert lower(POD, plan, placement).messages == expected


def test_an_absurd_size_gives_an_absurd_count_not_an_overflow():
    plan = builtin_plan("allgather:gpus=8")
    small = packet_messages(plan, 1 << 20, LINE)
    huge = packet_messages(plan, 10**30, LINE)
    assert huge > 10**26 > small


@given(st.integers(1, 10**9), st.integers(1, 10**12))
def test_a_run_is_refused_exactly_when_its_estimate_exceeds_the_budget(chunk_bytes, budget):
    plan = builtin_plan("allgather:gpus=2:tbs=1")
    need = packet_bytes(packet_messages(plan, chunk_bytes, LINE))
    if need > budget:
        with pytest.raises(ConfigError, match="more than the packet engine's limit"):
            admit(plan, chunk_bytes, LINE, Budget(budget, "a test"))
    else:
        assert admit(plan, chunk_bytes, LINE, Budget(budget, "a test")) > 0


def test_the_refusal_says_the_estimate_the_budget_and_a_size_that_fits():
    plan = builtin_plan("allgather:gpus=64")
    with pytest.raises(ConfigError) as refused:
        admit(plan, plan.chunk_bytes(10**9), LINE, Budget(8 * 10**9, "a test"))
    message = str(refused.value)
    assert "492,1" in message and "GB of arrays" in message  # messages, then the estimate
    assert "limit of 8.0 GB (a test)" in message
    assert "at most about" in message and "or fewer GPUs" in message


def test_the_budget_given_wins_over_the_environment_which_wins_over_the_machine(monkeypatch):
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    machine = memory_budget()
    assert 0 < machine.nbytes <= available_memory() and "available" in machine.origin
    monkeypatch.setenv(MEMORY_ENV, "3GB")
    assert memory_budget() == Budget(3 * 10**9, f"${MEMORY_ENV}")
    with limit_memory(2 * 10**9):
        assert memory_budget().nbytes == 2 * 10**9
    assert memory_budget().nbytes == 3 * 10**9


@pytest.mark.parametrize("text", ["lots", "-1GB", "0"])
def test_a_bad_budget_in_the_environment_is_a_located_error(monkeypatch, text):
    monkeypatch.setenv(MEMORY_ENV, text)
    with pytest.raises(ConfigError, match=rf"^\${MEMORY_ENV}: "):
        memory_budget()


def test_available_memory_is_no_more_than_the_machine_has():
    with open("/proc/meminfo") as lines:
        fields = dict(line.split(":", 1) for line in lines)
    total = int(fields["MemTotal"].split()[0]) * 1024
    assert 0 < available_memory() <= total


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(BUILTIN_ALGORITHMS), st.integers(2, 5), st.integers(1, 10**8))
def test_no_threadblock_count_of_the_search_makes_fewer_messages(algorithm, gpus, size):
    # ``simulate --tbs auto`` admits the plan at its own count before searching.
    base = builtin_plan(f"{algorithm}:gpus={gpus}")
    fewest = packet_messages(base, base.chunk_bytes(size), LINE)
    for count in [c for c in candidate_counts(gpus) if c <= 32]:  # the larger are slow to build
        try:
            plan = builtin_plan(f"{algorithm}:gpus={gpus}", tbs=count)
        except ConfigError:
            continue
        assert packet_messages(plan, plan.chunk_bytes(size), LINE) >= fewest


def test_buffers_larger_than_the_budget_holds_are_refused_before_placement():
    wrong = (Path(__file__).parent / "bad_inputs" / "wrong-result.xml").read_text()
    small = parse_msccl_xml(wrong, "small.xml")
    large = parse_msccl_xml(wrong.replace('o_chunks="2"', 'o_chunks="1000000"'), "large.xml")
    page, budget = POD.socket.page_bytes, Budget(10**9, "a test")
    chunk = large.chunk_bytes(10**8)
    assert buffer_pages(large, chunk, page) == 2 * 10**6 * -(-chunk // page)
    assert admit(small, chunk, LINE, budget, page) == admit(large, chunk, LINE, budget)
    with pytest.raises(ConfigError, match="buffers would hold 24,416,000,000 pages"):
        admit(large, chunk, LINE, budget, page)
