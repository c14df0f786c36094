"""The run's verdict for an operator: exit status 0, or 3 when too many documents were dead-lettered.

Beam-free. A committed run whose wholly dead-lettered documents are more than
``--max-dead-letter-fraction`` of the documents read exits with status 3, so that a nightly job
that chunked almost nothing (a misspelt ``content_format``, a glob that matched three copies of
the corpus) does not look like success. The rule reads the report's counts only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_MAX_DEAD_LETTER_FRACTION",
    "EXIT_COMMITTED",
    "EXIT_DEAD_LETTER_THRESHOLD",
    "EXIT_NOT_COMMITTED",
    "EXIT_OPTION_ERROR",
    "percent",
    "verdict",
    "verdict_line",
]

#: Exit statuses of the chunk job.
EXIT_COMMITTED = 0
EXIT_NOT_COMMITTED = 1
EXIT_OPTION_ERROR = 2
EXIT_DEAD_LETTER_THRESHOLD = 3

#: Default of --max-dead-letter-fraction: a healthy corpus dead-letters a few documents in a
#: hundred at most (empty or oversized ones); one in ten lost is a systematic fault worth a
#: non-zero exit (docs/output.md, "Exit statuses").
DEFAULT_MAX_DEAD_LETTER_FRACTION = 0.1

#: How many dead-letter reasons the verdict's line names.
_REASONS_SHOWN = 3


def verdict(report: Mapping[str, Any], max_dead_letter_fraction: float) -> dict[str, Any]:
    """The verdict of a finished run from its report's counts.

    Counted: ``documents_dead_lettered`` (documents with no accepted chunk, every row of a
    duplicated id included) against ``documents_read`` (input rows). Partly rejected documents
    are chunked and do not count. A run that read no document has the fraction 0.

    Args:
        report: A report with ``documents_read``, ``documents_dead_lettered`` and
            ``dead_letter_by_reason`` (reason -> rows).
        max_dead_letter_fraction: From 0 to 1; a fraction over it gives exit status 3 (1: never).

    Returns:
        ``{"exit_status": 0 | 3, "dead_letter_fraction": float (0 to 1, 6 decimals),
        "max_dead_letter_fraction": float, "over_dead_letter_threshold": bool,
        "most_common_by_reason": {reason: rows}}``, the reasons at most three, most rows first
        (ties by name), over the whole dead letter.
    """
    read = report["documents_read"]
    dead = report["documents_dead_lettered"]
    fraction = dead / read if read else 0.0
    over = fraction > max_dead_letter_fraction
    reasons = sorted(report.get("dead_letter_by_reason", {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "exit_status": EXIT_DEAD_LETTER_THRESHOLD if over else EXIT_COMMITTED,
        "dead_letter_fraction": round(fraction, 6),
        "max_dead_letter_fraction": max_dead_letter_fraction,
        "over_dead_letter_threshold": over,
        "most_common_by_reason": dict(reasons[:_REASONS_SHOWN]),
    }


def verdict_line(report: Mapping[str, Any]) -> str | None:
    """The summary's last line when the run is over the threshold (``None`` otherwise), e.g.
    ``rechunk: 50 of 50 documents (100%) dead-lettered, over --max-dead-letter-fraction 0.1:
    exit status 3; most common reasons: unsupported_content_format 50``.

    ``report`` holds a ``verdict`` (:func:`verdict`) and the document counts.
    """
    found = report.get("verdict")
    if not found or not found["over_dead_letter_threshold"]:
        return None
    reasons = ", ".join(f"{reason} {rows:,}" for reason, rows in found["most_common_by_reason"].items()) or "none"
    return (
        f"rechunk: {report['documents_dead_lettered']:,} of {report['documents_read']:,} documents "
        f"({percent(found['dead_letter_fraction'])}) dead-lettered, over --max-dead-letter-fraction "
        f"{found['max_dead_letter_fraction']:g}: exit status {found['exit_status']}; most common reasons: {reasons}"
    )


def percent(fraction: float) -> str:
    """``fraction`` as a percent for people: ``100%``, ``99.9%``, ``1.2%``, ``0.05%``; never rounded
    to ``100%`` or ``0%`` unless it is exactly that."""
    value = fraction * 100
    if value in (0, 100):
        return f"{value:.0f}%"
    for decimals in (1, 2, 3, 4):
        shown = f"{value:.{decimals}f}"
        if 0 < float(shown) < 100:
            return f"{shown}%"
    return f"{value:.4g}%"
