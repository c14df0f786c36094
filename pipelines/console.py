"""What the jobs show on the console: their stdout lines and the workers' progress log entries."""

from __future__ import annotations

import logging
import os
import re
import sys

__all__ = ["WorkerProgressFilter", "say", "show_progress"]


def say(text: str, end: str = "\n") -> None:
    """Print to stdout; a reader that has gone (``rechunk ... | head -1``) is not an error: the
    job's outcome stands and its report is in report.json, so the rest of stdout is dropped."""
    try:
        print(text, end=end, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class WorkerProgressFilter(logging.Filter):
    """Worker processes' log entries reach the launcher through Beam's logging service as one text
    per entry (``multi_processing``): of those below WARNING, pass rechunk's progress lines only,
    shown as the ``rechunk`` logger's own."""

    _MESSAGE = re.compile(r'message: "(progress: [^"]*)"')

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        found = self._MESSAGE.search(record.getMessage())
        if found is None:
            return False
        record.name, record.msg, record.args = "rechunk", found.group(1), ()
        return True


def show_progress() -> None:
    """Log warnings of every logger, and the ``rechunk`` logger's progress lines (``INFO``), from
    this process and from worker processes; Beam's own ``INFO`` entries stay hidden."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("rechunk").setLevel(logging.INFO)  # progress lines (transforms.progress)
    forwarded = logging.getLogger("apache_beam.runners.portability.local_job_service")
    forwarded.setLevel(logging.INFO)
    forwarded.addFilter(WorkerProgressFilter())
