"""Samplers that summarise a stream of numbers, one value per tick."""

from rolling.samplers import ExponentialMean, RollingMean

__all__ = ["ExponentialMean", "RollingMean"]
