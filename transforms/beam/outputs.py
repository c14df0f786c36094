"""The tags of the job's tagged outputs and its Beam metrics (namespace :data:`METRICS_NAMESPACE`)."""

from __future__ import annotations

from collections.abc import Iterable

from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput

from transforms.documents import DeadLetter

__all__ = ["DEAD_LETTER", "MANIFEST", "METRICS_NAMESPACE", "BundleCounts", "count", "counter", "tagged_dead_letter"]

#: The tag of every transform's dead-letter output.
DEAD_LETTER = "dead_letter"
#: The tag of the manifest rows (``documents/``) of documents whose chunks were all accepted.
MANIFEST = "documents"
#: Namespace of the job's Beam metrics (read back into report.json).
METRICS_NAMESPACE = "rechunk"


def counter(name: str):
    """The job's Beam counter ``name`` (namespace :data:`METRICS_NAMESPACE`)."""
    return Metrics.counter(METRICS_NAMESPACE, name)


def count(increments: Iterable[tuple[str, int]]) -> None:
    """Add each ``(counter name, increment)`` to the job's Beam counters (an increment of 0
    still reports the counter)."""
    for name, increment in increments:
        counter(name).inc(increment)


class BundleCounts:
    """Counter increments added up in memory, reported to Beam by :meth:`flush` (a DoFn's
    ``finish_bundle``): a Beam counter costs a lookup on every ``inc``, about 8 µs for a tiny
    document's nine counters, and a bundle's increments are committed together anyway."""

    def __init__(self) -> None:
        self._totals: dict[str, int] = {}

    def add(self, increments: Iterable[tuple[str, int]]) -> None:
        """Add each ``(counter name, increment)`` (an increment of 0 still reports the counter)."""
        totals = self._totals
        for name, increment in increments:
            totals[name] = totals.get(name, 0) + increment

    def flush(self) -> None:
        """Report the totals to the job's Beam counters and start again from nothing."""
        count(self._totals.items())
        self._totals = {}


def tagged_dead_letter(row: DeadLetter) -> TaggedOutput:
    """``row`` on the :data:`DEAD_LETTER` output, counted under ``dead_letter.<reason>``."""
    counter(f"dead_letter.{row.reason}").inc()
    return TaggedOutput(DEAD_LETTER, row)
