"""Samplers read on every tick: push one value, then read ``value``."""

from __future__ import annotations


class ExponentialMean:
    """Exponentially weighted mean: each new value counts ``alpha``, the past ``1 - alpha``."""

    def __init__(self, alpha: float) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
        self.alpha = alpha
        self._value: float | None = None

    def push(self, x: float) -> None:
        if self._value is None:
            self._value = x
        else:
            self._value = self._value + self.alpha * (x - self._value)

    @property
    def value(self) -> float | None:
        """The current mean, or None before the first push."""
        return self._value


class RollingMean:
    """Mean of the last ``window`` values pushed (fewer while the window is filling)."""

    def __init__(self, window: int) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive whole number, got {window!r}")
        self.window = window

    def push(self, x: float) -> None:
        raise NotImplementedError("RollingMean.push")

    @property
    def value(self) -> float | None:
        """The mean of the values in the window, or None before the first push."""
        raise NotImplementedError("RollingMean.value")
