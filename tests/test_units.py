"""The one unit grammar, seen from Python and from the commands: every option and every
scenario key reads durations, sizes and rates the same way (the core's parser)."""

from __future__ import annotations

import pytest

from shortflow import Scenario
from shortflow.units import parse_duration, parse_rate, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("200ms", 0.2), ("1e2ms", 0.1), ("1.5s", 1.5), ("250us", 250e-6), ("250µs", 250e-6), ("2min", 120.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["10Mbit", "10Mbps", "10mbit", "10Mbit/s", "0.01Gbit"])
def test_rates_in_every_spelling_mean_bits(text: str) -> None:
    assert parse_rate(text) == 10_000_000


def test_sizes_are_exact() -> None:
    assert parse_size("1.1kB") == 1100
    assert parse_size("1MiB") == 1 << 20
    with pytest.raises(ValueError, match="whole number of bytes"):
        parse_size("1.5B")
    with pytest.raises(ValueError, match="2\\^53"):
        parse_size("1e23B")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("200", "has no unit"),
        ("5m", 'unknown unit "m"'),
        ("-5ms", "is negative"),
        ("fast", "not a number with a unit"),
    ],
)
def test_errors_name_the_value(text: str, words: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_duration(text, what="--idle-timeout")
    assert str(e.value).startswith(f'--idle-timeout "{text}"') and words in str(e.value)


def test_lowercase_bps_is_refused_as_ambiguous() -> None:
    with pytest.raises(ValueError, match="bytes per second to tc"):
        parse_rate("10mbps")


def test_the_simulator_and_the_testbed_accept_the_same_spellings() -> None:
    """Both worlds read the scenario's units through the core: 1e2ms, tc's mbit and 1.1kB are
    accepted by the simulator's check and give the testbed the same values."""
    from shortflow.testbed.scenario_real import load

    text = """
[path]
rtt = "1e2ms"
bandwidth = "10mbit"
[client]
stack = "linux"
[server]
stack = "linux"
[workload]
request = "0.3kB"
response = "1.1kB"
"""
    sc = Scenario.from_text(text, source="units.toml")  # the simulator's check
    real = load(sc)
    assert real.rtt_s == pytest.approx(0.1)
    assert real.bandwidth_bps == 10_000_000
    assert (real.request_bytes, real.response_bytes) == (300, 1100)


def test_a_bad_unit_is_a_shortflow_error_and_a_value_error() -> None:
    """The core's typed UnitError reaches Python as `shortflow.UnitError`, under both
    `ShortflowError` (the package's hierarchy) and `ValueError` (what it is), with its parts."""
    from shortflow.exceptions import ShortflowError, UnitError

    with pytest.raises(UnitError, match='--idle-timeout "5" has no unit') as info:
        parse_duration("5", what="--idle-timeout")
    assert isinstance(info.value, ShortflowError)
    assert isinstance(info.value, ValueError)
    assert (info.value.quantity, info.value.text) == ("duration", "5")
