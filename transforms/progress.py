"""Progress lines for long runs: documents and chunks per second, logged at a steady interval.

Beam-free. One :class:`ProgressLog` per worker process (``shared_progress``) is fed by the steps
that finish documents; it logs on the ``rechunk`` logger at INFO, at most once per interval, so a
run of hours prints a line every ``interval_seconds`` and a short run prints none.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable

__all__ = ["ProgressLog", "shared_progress"]

_LOG = logging.getLogger("rechunk")


class ProgressLog:
    """Counts finished documents and chunks; logs totals and rates every ``interval_seconds``.

    Args:
        interval_seconds: Seconds between lines (a monotonic clock's); 0 logs nothing.
        clock: Returns seconds (default ``time.monotonic``); tests pass a fake one.
        log: Called with each line (default: INFO on the ``rechunk`` logger).

    Raises:
        ValueError: ``interval_seconds`` is negative.
    """

    def __init__(
        self,
        interval_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if interval_seconds < 0:
            raise ValueError(f"interval_seconds must be >= 0, got {interval_seconds}")
        self._interval = interval_seconds
        self._clock = clock
        self._log = log or _LOG.info
        self.documents = 0
        self.chunks = 0
        self._since = clock()
        self._documents_then = 0
        self._chunks_then = 0

    def add(self, documents: int = 0, chunks: int = 0) -> None:
        """Count finished work; log a line when an interval has passed since the last one."""
        self.documents += documents
        self.chunks += chunks
        if not self._interval:
            return
        now = self._clock()
        elapsed = now - self._since
        if elapsed < self._interval:
            return
        self._log(
            f"progress: {self.documents:,} documents, {self.chunks:,} chunks in this worker; "
            f"last {elapsed:.0f} s: {(self.documents - self._documents_then) / elapsed:,.1f} documents/s, "
            f"{(self.chunks - self._chunks_then) / elapsed:,.1f} chunks/s"
        )
        self._since, self._documents_then, self._chunks_then = now, self.documents, self.chunks


@functools.cache
def shared_progress(interval_seconds: float) -> ProgressLog:
    """The worker process's one :class:`ProgressLog` for this interval (its DoFns share it).

    Also lets the ``rechunk`` logger's INFO lines through in this process: a worker process
    (``multi_processing``, a portable runner's SDK worker, Dataflow) starts with its own logging
    configuration, where they would otherwise be dropped.
    """
    if interval_seconds and _LOG.getEffectiveLevel() > logging.INFO:
        _LOG.setLevel(logging.INFO)
    return ProgressLog(interval_seconds)
