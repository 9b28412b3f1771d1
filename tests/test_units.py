import pytest
from hypothesis import given
from hypothesis import strategies as st

from nunasim import units
from nunasim.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100kB", 100_000),
        ("1MB", 1_000_000),
        ("1GiB", 2**30),
        ("4KiB", 4096),
        ("256B", 256),
        ("256", 256),
        (4096, 4096),
        ("1.5kB", 1500),
        ("10 MB", 10_000_000),
        ("1KB", 1000),
        ("2TiB", 2 * 2**40),
    ],
)
def test_parse_size(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize("text", ["1Mb", "1kb", "1.5B", "ten MB", "1XB", "", True, None, -1.5])
def test_parse_size_refuses(text):
    with pytest.raises(ConfigError):
        units.parse_size(text)


@given(st.integers(min_value=1, max_value=10**15))
def test_format_size_round_trips(nbytes):
    assert units.parse_size(units.format_size(nbytes)) == nbytes


@pytest.mark.parametrize(
    ("text", "ps"),
    [
        ("500ns", 500_000),
        ("120 ns", 120_000),
        ("1.5us", 1_500_000),
        ("1.5µs", 1_500_000),
        ("8333ps", 8333),
        ("1ms", 10**9),
        ("2s", 2 * 10**12),
    ],
)
def test_parse_time(text, ps):
    assert units.parse_time(text) == ps


@pytest.mark.parametrize("text", ["500", 500, "1.5ps", "5 min", "ns"])
def test_parse_time_refuses(text):
    with pytest.raises(ConfigError):
        units.parse_time(text)


def test_time_conversions():
    assert units.ns(920) == 920_000
    assert units.us(1.32) == 1_320_000
    assert units.ps_to_ns(780_000) == 780.0
    assert units.ps_to_us(1_180_000) == pytest.approx(1.18)
    assert units.ps_to_s(units.PS_PER_S) == 1.0
    # Half-up, never half-to-even.
    assert units.ns(0.0005) == 1
    assert units.ns(0.0025) == 3


def test_cycles():
    # 10 cycles at 1.2 GHz = 8.3333 ns, rounded to the picosecond.
    assert units.cycles_to_ps(10, 1.2e9) == 8333
    assert units.cycles_to_ps(12, 1.2e9) == 10_000
    assert units.ps_to_cycles(10_000, 1.2e9) == pytest.approx(12)
    with pytest.raises(ValueError):
        units.cycles_to_ps(1, 0)


def test_parse_frequency_and_flops():
    assert units.parse_frequency("1.2GHz") == pytest.approx(1.2e9)
    assert units.parse_frequency("800 MHz") == pytest.approx(8e8)
    assert units.parse_flops("25PFLOPS") == pytest.approx(2.5e16)
    assert units.parse_flops("100 TFLOPS") == pytest.approx(1e14)
    for bad in ("1.2", 1.2e9, "1.2Gz"):
        with pytest.raises(ConfigError):
            units.parse_frequency(bad)
    with pytest.raises(ConfigError):
        units.parse_flops("25P")


@pytest.mark.parametrize(
    ("text", "bps"),
    [("50GB/s", 5e10), ("2.5TB/s", 2.5e12), ("10TB/s", 1e13), ("1GiB/s", 2**30)],
)
def test_parse_bandwidth(text, bps):
    assert units.parse_bandwidth(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["50GB", "50Gb/s", "50", 5e10, "50/s"])
def test_parse_bandwidth_refuses(text):
    with pytest.raises(ConfigError):
        units.parse_bandwidth(text)


def test_transfer_time():
    # One 256 B line: 5.12 ns on a 50 GB/s port, 102.4 ps on a 2.5 TB/s stack.
    assert units.transfer_ps(256, units.gbps(50)) == 5120
    assert units.transfer_ps(256, units.tbps(2.5)) == 102
    assert units.transfer_ps(0, 1.0) == 0
    with pytest.raises(ValueError):
        units.transfer_ps(1, 0)


def test_formatting():
    assert units.format_bandwidth(7.2e12) == "7.2 TB/s"
    assert units.format_bandwidth(1e13) == "10 TB/s"
    assert units.format_time(920_000) == "920 ns"
    assert units.format_time(15_000_000) == "15 us"
    assert units.format_time(512) == "512 ps"
    assert units.format_frequency(1.2e9) == "1.2 GHz"
    assert units.format_flops(2.5e16) == "25 PFLOPS"


# The conversions ``units`` took over, against the expressions they replace, to the bit.
@given(ps=st.integers(0, 2**62) | st.floats(0, 1e18, allow_nan=False))
def test_ps_to_ms_is_the_division_by_1e9_it_replaced(ps):
    assert units.ps_to_ms(ps) == ps / 1e9


@given(ps=st.integers(0, 2**62) | st.floats(0, 1e18, allow_nan=False))
def test_ps_to_ns_is_the_division_by_1000_it_replaced(ps):
    assert units.ps_to_ns(ps) == ps / 1000


@given(seconds=st.floats(0, 1e6, allow_nan=False))
def test_s_to_ps_is_the_product_by_1e12_it_replaced(seconds):
    assert units.s_to_ps(seconds) == seconds * 1e12


def _amount(nbytes):
    """Admission's memory figures as they were first written."""
    if nbytes < 10**9:
        return f"{nbytes / 1e6:,.0f} MB"
    return f"{nbytes / 1e9:,.1f} GB" if nbytes < 10**15 else f"{nbytes / 1e9:.3g} GB"


@given(nbytes=st.integers(0, 10**24))
def test_format_memory_is_admissions_old_amount(nbytes):
    assert units.format_memory(nbytes) == _amount(nbytes)


def test_format_memory():
    assert units.format_memory(412_000_000) == "412 MB"
    assert units.format_memory(9_400_000_000) == "9.4 GB"
    assert units.format_memory(16 * 10**30) == "1.6e+22 GB"
    assert units.bytes_to_gb(2_500_000_000) == 2.5
    assert units.bytes_to_mb(2_500_000) == 2.5


@given(st.integers(0, 10**15))
def test_format_bytes_reads_back_within_its_three_figures(nbytes):
    from nunasim.units import format_bytes, parse_size

    text = format_bytes(nbytes)
    number, unit = text.split(" ")
    assert unit in ("B", "kB", "MB", "GB", "TB")
    assert float(number) < 1000 or unit == "TB"
    assert abs(parse_size(number + unit) - nbytes) <= 0.005 * nbytes + 0.5


def test_format_bytes_examples():
    from nunasim.units import format_bytes

    assert [format_bytes(n) for n in (300, 907_840, 4_194_304, 999_999_999)] == [
        "300 B",
        "908 kB",
        "4.19 MB",
        "1 GB",
    ]
