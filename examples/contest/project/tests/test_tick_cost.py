"""How much arithmetic one tick costs, counted rather than timed (so it is the same on every
machine): the values pushed are a float type that counts every +, -, * and / done on it."""

import pytest

from rolling import RollingMean

WINDOW = 50
TICKS = 2000


class Counted(float):
    """A float that counts the arithmetic done with it; results are Counted too."""

    ops = 0

    def _tally(self, result):
        Counted.ops += 1
        return Counted(result)

    def __add__(self, other):
        return self._tally(float(self) + float(other))

    def __radd__(self, other):
        return self._tally(float(other) + float(self))

    def __sub__(self, other):
        return self._tally(float(self) - float(other))

    def __rsub__(self, other):
        return self._tally(float(other) - float(self))

    def __mul__(self, other):
        return self._tally(float(self) * float(other))

    def __rmul__(self, other):
        return self._tally(float(other) * float(self))

    def __truediv__(self, other):
        return self._tally(float(self) / float(other))

    def __rtruediv__(self, other):
        return self._tally(float(other) / float(self))


@pytest.mark.dod("constant-tick-cost")
def test_arithmetic_per_tick(loop_metric):
    values = [Counted(((i * 7919) % 1000 - 500) / 8.0) for i in range(TICKS)]
    sampler = RollingMean(WINDOW)
    Counted.ops = 0
    for x in values:
        sampler.push(x)
        value = sampler.value
    ops = Counted.ops
    assert isinstance(value, Counted), (
        "the mean must be computed from the values pushed (converting them to float hides "
        "the arithmetic this test counts)"
    )
    assert value == pytest.approx(sum(map(float, values[-WINDOW:])) / WINDOW, rel=1e-9)
    loop_metric("ops_per_tick", ops / TICKS)
