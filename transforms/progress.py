"""Progress lines for long runs: documents done of the job's total, the rate and the time left.

Beam-free. One :class:`ProgressLog` per worker process (``shared_progress``) is fed by the steps
that finish documents (chunked, kept from ``--previous``, or dead-lettered); it logs on the
``rechunk`` logger at INFO, at most once per interval, so a run of hours prints a line every
``interval_seconds`` and a short run prints none::

    progress: 12,345 of 1,000,000 documents (1.2%), 3,456 documents/s, 48,000 chunks, about 4 min 46 s left (this worker)

The total is the job's (the input's rows, from its Parquet footers before the pipeline starts); a
worker does not know its share of it. The counts, the percent and the rate are this worker's; the
time left is what the job's remaining documents would take at this worker's rate alone: the
job's own time left on one worker, and an upper bound, about the number of workers times too
long, when several share the work.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable

__all__ = ["ProgressLog", "format_duration", "progress_line", "shared_progress"]

_LOG = logging.getLogger("rechunk")


def format_duration(seconds: float) -> str:
    """``seconds`` for people, to the second under an hour, to the minute above:
    ``0 s``, ``46 s``, ``4 min 46 s``, ``2 h 5 min``, ``50 h 0 min``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min"


def progress_line(documents: int, chunks: int, rate: float | None, total: int | None) -> str:
    """One progress line (without the logger's prefix).

    Args:
        documents: Documents this worker has finished.
        chunks: Chunks written (or kept) for them.
        rate: This worker's documents per second; ``None`` when not yet known.
        total: The job's documents to read; ``None`` when unknown (the line then gives counts and
            rate only).
    """
    rate_text = (
        "rate unknown" if rate is None else f"{rate:,.0f} documents/s" if rate >= 10 else f"{rate:.1f} documents/s"
    )
    if total is None:
        return f"progress: {documents:,} documents, {rate_text}, {chunks:,} chunks (this worker)"
    share = f" ({100 * documents / total:.1f}%)" if total else ""
    left = total - documents
    if left <= 0:
        eta = "the job's total reached"
    elif not rate:
        eta = "time left unknown"
    else:
        eta = f"about {format_duration(left / rate)} left"
    return f"progress: {documents:,} of {total:,} documents{share}, {rate_text}, {chunks:,} chunks, {eta} (this worker)"


class ProgressLog:
    """Counts finished documents and chunks; logs a :func:`progress_line` every ``interval_seconds``.

    The rate is over the time since the first document this log counted (steadier than the last
    interval's, for the time left), in documents per second; the first line comes an interval
    after that document (a worker may wait long before its first, for the duplicate count).

    Args:
        interval_seconds: Seconds between lines (a monotonic clock's); 0 logs nothing.
        documents_total: The job's documents to read, or ``None`` when unknown.
        clock: Returns seconds (default ``time.monotonic``); tests pass a fake one.
        log: Called with each line (default: INFO on the ``rechunk`` logger).

    Raises:
        ValueError: ``interval_seconds`` or ``documents_total`` is negative.
    """

    def __init__(
        self,
        interval_seconds: float,
        *,
        documents_total: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if interval_seconds < 0:
            raise ValueError(f"interval_seconds must be >= 0, got {interval_seconds}")
        if documents_total is not None and documents_total < 0:
            raise ValueError(f"documents_total must be >= 0, got {documents_total}")
        self._interval = interval_seconds
        self._total = documents_total
        self._clock = clock
        self._log = log or _LOG.info
        self.documents = 0
        self.chunks = 0
        self._since = 0.0
        self._first: tuple[float, int] | None = None  # (time, documents) at the first count

    def add(self, documents: int = 0, chunks: int = 0) -> None:
        """Count finished work; log a line when an interval has passed since the last one."""
        self.documents += documents
        self.chunks += chunks
        if not self._interval:
            return
        now = self._clock()
        if self._first is None:
            if not documents:
                return
            self._first = (now, self.documents)
            self._since = now  # the first line an interval after the first document, not after a wait
        if now - self._since < self._interval:
            return
        self._log(progress_line(self.documents, self.chunks, self.rate(now), self._total))
        self._since = now

    def rate(self, now: float) -> float | None:
        """Documents per second since the first document counted; ``None`` before any time passed."""
        if self._first is None or now <= self._first[0]:
            return None
        return (self.documents - self._first[1]) / (now - self._first[0])


@functools.cache
def shared_progress(interval_seconds: float, documents_total: int | None = None) -> ProgressLog:
    """The worker process's one :class:`ProgressLog` for this interval and total (its DoFns share it).

    Also lets the ``rechunk`` logger's INFO lines through in this process: a worker process
    (``multi_processing``, a portable runner's SDK worker, Dataflow) starts with its own logging
    configuration, where they would otherwise be dropped.
    """
    if interval_seconds and _LOG.getEffectiveLevel() > logging.INFO:
        _LOG.setLevel(logging.INFO)
    return ProgressLog(interval_seconds, documents_total=documents_total)
