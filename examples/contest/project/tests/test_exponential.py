import pytest

from rolling import ExponentialMean


def test_first_value_is_the_mean():
    sampler = ExponentialMean(0.5)
    assert sampler.value is None
    sampler.push(4.0)
    assert sampler.value == 4.0


def test_each_value_counts_alpha():
    sampler = ExponentialMean(0.25)
    for x in (8.0, 0.0, 0.0):
        sampler.push(x)
    assert sampler.value == pytest.approx(4.5)


@pytest.mark.parametrize("alpha", [0.0, -0.1, 1.5])
def test_alpha_must_be_in_range(alpha):
    with pytest.raises(ValueError):
        ExponentialMean(alpha)
