"""Figures (repeated measurements) and checks (ratios and limits) of one benchmark run."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal

import attrs

Setting = str | int | float | bool | None


@attrs.frozen(kw_only=True)
class Figure:
    """One quantity measured several times: its samples, their median, min and max."""

    key: str
    label: str
    unit: str
    samples: tuple[float, ...]
    settings: Mapping[str, Setting] = attrs.field(factory=dict)

    @property
    def median(self) -> float:
        """The median of the samples (the figure every comparison uses)."""
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        """The smallest sample."""
        return min(self.samples)

    @property
    def max(self) -> float:
        """The largest sample."""
        return max(self.samples)

    def as_json(self) -> dict[str, object]:
        """The figure as plain JSON values."""
        return {
            "label": self.label,
            "unit": self.unit,
            "median": self.median,
            "min": self.min,
            "max": self.max,
            "samples": list(self.samples),
            "settings": dict(self.settings),
        }


Direction = Literal["at_least", "at_most"]  # which side of its target a check must be on


@attrs.frozen(kw_only=True)
class Check:
    """A target: a ratio of two figures' medians, or one figure's median against a limit."""

    key: str
    label: str
    value: float
    target: float | None  # None: reported for information, no target
    direction: Direction
    unit: str  # "x" for a ratio, else the figure's unit
    numerator: str
    denominator: str | None = None

    @property
    def met(self) -> bool | None:
        """Whether the value reaches the target (None when there is no target)."""
        if self.target is None:
            return None
        if self.direction == "at_least":
            return self.value >= self.target
        return self.value <= self.target

    def as_json(self) -> dict[str, object]:
        """The check as plain JSON values."""
        return {
            "label": self.label,
            "value": self.value,
            "target": self.target,
            "direction": self.direction,
            "unit": self.unit,
            "met": self.met,
            "numerator": self.numerator,
            "denominator": self.denominator,
        }


@attrs.define
class Results:
    """Everything one run measured, in the order it was measured."""

    figures: dict[str, Figure] = attrs.field(factory=dict)
    checks: dict[str, Check] = attrs.field(factory=dict)

    def add(self, figure: Figure) -> Figure:
        """Keep ``figure``; a key measured twice is a bug in the run plan."""
        if figure.key in self.figures:
            raise ValueError(f"figure {figure.key} measured twice")
        self.figures[figure.key] = figure
        return figure

    def ratio(
        self, key: str, label: str, numerator: str, denominator: str, *, at_least: float | None
    ) -> Check:
        """Compare two figures of this run by their medians: numerator / denominator."""
        value = self.figures[numerator].median / self.figures[denominator].median
        check = Check(
            key=key,
            label=label,
            value=value,
            target=at_least,
            direction="at_least",
            unit="x",
            numerator=numerator,
            denominator=denominator,
        )
        self.checks[key] = check
        return check

    def limit(self, key: str, label: str, figure: str, *, at_most: float) -> Check:
        """Hold one figure's median against an absolute limit."""
        check = Check(
            key=key,
            label=label,
            value=self.figures[figure].median,
            target=at_most,
            direction="at_most",
            unit=self.figures[figure].unit,
            numerator=figure,
        )
        self.checks[key] = check
        return check


async def repeat(times: int, once: Callable[[], Awaitable[float]]) -> tuple[float, ...]:
    """Run ``once`` ``times`` times, one after another; return every sample it measured."""
    samples = []
    for _ in range(times):
        sample = await once()
        if not math.isfinite(sample):
            raise ValueError(f"a measurement returned {sample}")
        samples.append(sample)
    return tuple(samples)


@attrs.define
class Stopwatch:
    """Wall-clock and this process's CPU time of one timed block (``with Stopwatch() as t``)."""

    wall: float = 0.0
    cpu: float = 0.0

    def __enter__(self) -> Stopwatch:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


@attrs.frozen
class Drained:
    """One timed drain: how many messages, in how long, for how much of this process's CPU."""

    count: int
    timing: Stopwatch

    @property
    def rate(self) -> float:
        """Messages per second of wall-clock time."""
        return rate(self.count, self.timing.wall)

    @property
    def cpu_us(self) -> float:
        """Microseconds of this process's CPU per message (robust to a busy machine)."""
        return self.timing.cpu / self.count * 1e6


def rate(count: int, seconds: float) -> float:
    """Items per second; a zero duration cannot happen on a real clock and is an error."""
    if seconds <= 0:
        raise ValueError("a measured duration must be positive")
    return count / seconds
