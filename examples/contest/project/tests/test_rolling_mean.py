import statistics

import pytest

from rolling import RollingMean


def feed(sampler, values):
    for x in values:
        sampler.push(x)
    return sampler.value


@pytest.mark.parametrize("window", [0, -3, 2.5, True])
def test_window_must_be_a_positive_whole_number(window):
    with pytest.raises(ValueError):
        RollingMean(window)


@pytest.mark.dod("correct-mean")
def test_no_value_before_the_first_push():
    assert RollingMean(3).value is None


@pytest.mark.dod("correct-mean")
def test_mean_while_the_window_is_filling():
    sampler = RollingMean(4)
    sampler.push(1.0)
    assert sampler.value == 1.0
    sampler.push(2.0)
    assert sampler.value == 1.5


@pytest.mark.dod("correct-mean")
def test_oldest_value_leaves_the_window():
    assert feed(RollingMean(3), [1, 2, 3, 4, 5]) == pytest.approx(4.0)


@pytest.mark.dod("correct-mean")
def test_window_of_one_is_the_last_value():
    assert feed(RollingMean(1), [7.0, -2.0, 9.5]) == 9.5


@pytest.mark.dod("correct-mean")
def test_negative_values():
    assert feed(RollingMean(3), [-1.0, -5.0, 3.0, -7.0]) == pytest.approx(-3.0)


@pytest.mark.dod("correct-mean")
def test_fractional_values():
    assert feed(RollingMean(2), [0.1, 0.2, 0.3]) == pytest.approx(0.25)


@pytest.mark.dod("correct-mean")
@pytest.mark.parametrize("window", [1, 7, 50])
def test_every_tick_matches_a_reference(window):
    values = [((i * 7919) % 1000 - 500) / 8.0 for i in range(600)]
    sampler = RollingMean(window)
    for i, x in enumerate(values):
        sampler.push(x)
        expected = statistics.fmean(values[max(0, i + 1 - window) : i + 1])
        assert sampler.value == pytest.approx(expected, rel=1e-9, abs=1e-9)
