"""The tags of the job's tagged outputs and its Beam metrics (namespace :data:`METRICS_NAMESPACE`)."""

from __future__ import annotations

from collections.abc import Iterable

from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput

from transforms.documents import DeadLetter

__all__ = ["DEAD_LETTER", "MANIFEST", "METRICS_NAMESPACE", "count", "counter", "tagged_dead_letter"]

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


def tagged_dead_letter(row: DeadLetter) -> TaggedOutput:
    """``row`` on the :data:`DEAD_LETTER` output, counted under ``dead_letter.<reason>``."""
    counter(f"dead_letter.{row.reason}").inc()
    return TaggedOutput(DEAD_LETTER, row)
