"""What the jobs show on the console: their stdout lines and the workers' progress log entries."""

from __future__ import annotations

import logging
import os
import re
import sys

__all__ = [
    "EscapingFormatter",
    "WorkerProgressFilter",
    "error",
    "say",
    "show_progress",
    "shown",
    "use_escaping_formatter",
    "version_line",
]

#: An error line is cut at this many characters (after escaping) ...
ERROR_LINE_CHARS = 500
#: ... a line of stdout or of the log at this many.
OUTPUT_LINE_CHARS = 2_000

#: Runs that look like credentials: API keys of the common services by their prefixes, JSON web
#: tokens, and any run of 32 or more key characters mixing upper case, lower case and digits.
_SECRETS = re.compile(
    r"sk-[A-Za-z0-9_-]{16,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{30,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r"|(?<![A-Za-z0-9_+=-])[A-Za-z0-9_+=-]{32,}(?![A-Za-z0-9_+=-])"
)


def _looks_secret(run: str) -> bool:
    """Whether a run :data:`_SECRETS` matched is hidden: a known prefix, or a long run mixing upper
    case, lower case and digits (a hex digest, a path or a snake_case name is not)."""
    if len(run) < 32 or run.startswith(("sk-", "AKIA", "ASIA", "gh", "github_pat_", "xox", "AIza", "eyJ")):
        return True
    return any(c.isupper() for c in run) and any(c.islower() for c in run) and sum(c.isdigit() for c in run) >= 2


def _hide(found: re.Match[str]) -> str:
    run = found.group(0)
    return f"[hidden: {len(run)} characters]" if _looks_secret(run) else run


def _escaped(char: str) -> str:
    code = ord(char)
    if char in "\t\n\r":
        return {"\t": "\\t", "\n": "\\n", "\r": "\\r"}[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: object, limit: int = ERROR_LINE_CHARS, *, keep_newlines: bool = False) -> str:
    """``text`` as it may reach a terminal or a log: characters that are not printable (controls
    such as ESC, bidirectional and zero-width formatting, separators other than the space) as
    visible escapes (``\\x1b``, ``\\u202e``), runs that look like credentials as
    ``[hidden: N characters]``, and at most ``limit`` characters, the rest counted
    (``... (N more characters)``). ``keep_newlines`` keeps line breaks (each line bounded on its own).
    """
    value = str(text)
    if keep_newlines:
        return "\n".join(shown(line, limit) for line in value.split("\n"))
    head = value[: limit * 4]  # escaping grows the text at most fourfold: never scan more
    head = _SECRETS.sub(_hide, head)
    head = "".join(c if c.isprintable() else _escaped(c) for c in head)
    more = len(value) - limit * 4 if len(value) > limit * 4 else 0
    if len(head) > limit:
        more += len(head) - limit
        head = head[:limit]
    return f"{head}... ({more:,} more characters)" if more else head


def error(command: str, message: object) -> None:
    """``command: error: message`` on stderr, as one line :func:`shown` makes safe to display."""
    print(f"{command}: error: {shown(' '.join(str(message).split()))}", file=sys.stderr, flush=True)


class EscapingFormatter(logging.Formatter):
    """A log formatter whose entries pass through :func:`shown` (line breaks kept, each line
    bounded to :data:`OUTPUT_LINE_CHARS`): a document id or file name quoted in a warning cannot
    drive the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record), OUTPUT_LINE_CHARS, keep_newlines=True)


def say(text: str, end: str = "\n") -> None:
    """Print to stdout, each line through :func:`shown` (bounded to :data:`OUTPUT_LINE_CHARS`); a
    reader that has gone (``rechunk ... | head -1``) is not an error: the job's outcome stands and
    its report is in report.json, so the rest of stdout is dropped."""
    try:
        print(shown(text, OUTPUT_LINE_CHARS, keep_newlines=True), end=end, flush=True)
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


class BeamTracebackFilter(logging.Filter):
    """Drop Beam's error entries that carry a traceback (a worker's failed bundle, logged by the
    runner in this process or forwarded from a worker process): the job reports every failure
    itself, in one line (``rechunk: error: ...``), and a traceback is not for a user's mistake.
    Beam's warnings, and its errors without a traceback, pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or not record.name.startswith("apache_beam"):
            return True
        if record.exc_info:
            return False
        return "Traceback (most recent call last)" not in record.getMessage()


def show_progress() -> None:
    """Log warnings of every logger, and the ``rechunk`` logger's progress lines (``INFO``), from
    this process and from worker processes; Beam's own ``INFO`` entries stay hidden."""
    use_escaping_formatter()
    logging.getLogger("rechunk").setLevel(logging.INFO)  # progress lines (transforms.progress)
    forwarded = logging.getLogger("apache_beam.runners.portability.local_job_service")
    forwarded.setLevel(logging.INFO)
    forwarded.addFilter(WorkerProgressFilter())


def use_escaping_formatter() -> None:
    """The root logger's handlers (made by ``logging.basicConfig`` when there are none), warnings
    and up, each entry formatted by :class:`EscapingFormatter`, Beam's tracebacks left out
    (:class:`BeamTracebackFilter`)."""
    logging.basicConfig(level=logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(EscapingFormatter("%(levelname)s %(name)s: %(message)s"))
        if not any(isinstance(f, BeamTracebackFilter) for f in handler.filters):
            handler.addFilter(BeamTracebackFilter())


def version_line() -> str:
    """``rechunk X.Y.Z``: the installed distribution's version (the package's own without one)."""
    from importlib import metadata

    try:
        version = metadata.version("rechunk")
    except metadata.PackageNotFoundError:
        import transforms

        version = transforms.__version__
    return f"rechunk {version}"
