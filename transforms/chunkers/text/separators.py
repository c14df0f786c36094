"""Separators of the plain-text splitters: literal strings, or regular expressions.

Beam-free. With ``is_separator_regex`` (LangChain's name) every separator but ``""`` is a
regular expression in Python's ``re`` syntax, e.g. ``(?<=\\. )`` (after a full stop and a
space, matching no characters). A separator splits where its matches *start*, as LangChain's
``_split_text_with_regex`` does with ``re.split``: the matches are found left to right without
overlapping (``re.finditer``'s), and the text is never changed, so every chunk stays a slice of
the source. ``""`` keeps its meaning of "cut anywhere safe" in both modes.

Bounds, so that a separator cannot hang a job:

* a pattern is compiled by ``re`` when the splitter is built, and one that ``re`` refuses is a
  ``ValueError`` naming it (an option error in a configuration);
* a pattern that matches the empty string (``re.fullmatch(pattern, "")``: ``\\s*``, ``x?``,
  ``^``, ``$``), or matches no characters between every two letters and digits of a word (``\\B``,
  ``(?<=.)``, ``(?=.)``), is refused: it would cut inside every word, which ``""`` says plainly.
  Zero-width patterns that need text around them (lookarounds such as ``(?<=\\. )``, ``\\b``)
  are accepted;
* matching runs on the ``regex`` package (tiktoken's own dependency; its version-0 syntax is
  ``re``'s), which can stop a search: a pattern is tried on short probe texts when the splitter
  is built, and one that takes more than :data:`PROBE_SECONDS` on any of them (catastrophic
  backtracking such as ``(a|aa)+$``) is refused; on a document, all of its searches together
  may take :data:`DOCUMENT_SECONDS`, after which the document is dead-lettered as
  ``chunker_error`` (no chunk of it is written differently: it is chunked whole or not at all).
"""

from __future__ import annotations

import bisect
import re
import time
from array import array
from typing import Any

from transforms.chunkers.base import ChunkingError

__all__ = [
    "DOCUMENT_SECONDS",
    "PROBE_SECONDS",
    "Occurrences",
    "RegexClock",
    "check_pattern",
    "literal_occurrences",
    "regex_occurrences",
]

#: The time all the regular-expression searches of one document may take together (seconds).
DOCUMENT_SECONDS = 20.0
#: The time a pattern may take on one probe text when the splitter is built (seconds).
PROBE_SECONDS = 0.25
#: Probe texts: runs of one kind of character ending in one that rarely matches, where a
#: backtracking pattern shows its exponential time.
_PROBES = tuple(run * 40 + "\x00" for run in ("a", "1", " ", ".", "\n", "a ", ". ", "-", "ab", "a\n"))
_SHOWN = 80


def _shown(pattern: str) -> str:
    text = repr(pattern)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def check_pattern(pattern: Any, where: str) -> Any:
    """Compile a separator pattern (not ``""``) and return it for the ``regex`` package.

    Args:
        pattern: The separator as a regular expression in ``re`` syntax.
        where: How the option is named in an error (``separators[1]``, ``separator``).

    Returns:
        The ``regex`` package's compiled pattern (version-0 syntax, ``re``'s).

    Raises:
        ValueError: ``re`` refuses the pattern, it matches the empty string, or it takes more
            than :data:`PROBE_SECONDS` on a probe text; one line naming the pattern.
    """
    import regex

    if isinstance(pattern, str) and "[[:" in pattern:
        # re reads [[:alpha:]] as a set and a "]", the regex package as a POSIX class: refused.
        raise ValueError(
            f"{where}: {_shown(pattern)} holds a POSIX character class ([[:...:]]), which regular "
            "expression engines read differently; write the class out, e.g. [A-Za-z] or \\w"
        )
    try:
        compiled = re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as err:
        raise ValueError(f"{where}: {_shown(pattern)} is not a valid regular expression: {err}") from None
    if compiled.fullmatch("") is not None:
        raise ValueError(
            f"{where}: {_shown(pattern)} matches the empty string, so it would cut before every character; "
            'use "" to cut anywhere, or a lookaround such as (?<=\\. ) for a zero-width separator'
        )
    probe = "ab12cd"
    cuts = {m.start() for m in compiled.finditer(probe) if m.start() == m.end()}
    if cuts.issuperset(range(1, len(probe))):
        raise ValueError(
            f"{where}: {_shown(pattern)} matches the empty string between every two characters of "
            f'{probe!r}, so it would cut inside every word; use "" to cut anywhere, or a lookaround '
            "that needs punctuation or space, such as (?<=\\. )"
        )
    try:
        fast = regex.compile(pattern, flags=regex.VERSION0)
    except (regex.error, RecursionError, OverflowError) as err:
        raise ValueError(f"{where}: {_shown(pattern)} is not a valid regular expression: {err}") from None
    for probe in _PROBES:
        try:
            for _ in fast.finditer(probe, timeout=PROBE_SECONDS):
                pass
        except TimeoutError:
            raise ValueError(
                f"{where}: {_shown(pattern)} takes more than {PROBE_SECONDS} s on the {len(probe)}-character "
                f"text {_shown(probe)} (catastrophic backtracking); rewrite it without nested repetition"
            ) from None
    return fast


class RegexClock:
    """The time left for one document's regular-expression searches (:data:`DOCUMENT_SECONDS`)."""

    __slots__ = ("deadline", "seconds")

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = DOCUMENT_SECONDS if seconds is None else seconds
        self.deadline = time.monotonic() + self.seconds

    def matches(self, compiled: Any, text: str) -> tuple[array, array]:
        """The starts and the ends of the matches of ``compiled`` in ``text``, left to right, not
        overlapping (so both ascend), as two arrays of int64 (16 bytes a match).

        Raises:
            ChunkingError: ``chunker_error`` when the document's time runs out.
        """
        left = self.deadline - time.monotonic()
        starts, ends = array("q"), array("q")
        try:
            if left <= 0:
                raise TimeoutError
            for match in compiled.finditer(text, timeout=left):
                a, b = match.span()
                starts.append(a)
                ends.append(b)
            return starts, ends
        except TimeoutError:
            raise ChunkingError(
                "chunker_error",
                f"separator regex {_shown(compiled.pattern)} took more than {self.seconds:g} s "
                f"on this document ({len(text)} characters searched)",
            ) from None


class Occurrences:
    """Where one separator occurs in one document, for the token-sized search-back.

    The three questions the search asks, with the literal ``str.find`` / ``str.rfind`` meaning
    (an occurrence lies wholly inside the range asked about):

    * :meth:`last_start`: the last occurrence starting in ``(lo, limit]``;
    * :meth:`first_within`: the first occurrence in ``[lo, b)``;
    * :meth:`first_after`: the first occurrence starting after ``s``.

    Each returns the occurrence's start, or ``-1``.
    """

    def last_start(self, lo: int, limit: int) -> int:
        raise NotImplementedError

    def first_within(self, lo: int, b: int) -> int:
        raise NotImplementedError

    def first_after(self, s: int) -> int:
        raise NotImplementedError


class _Literal(Occurrences):
    __slots__ = ("n", "sep", "text")

    def __init__(self, text: str, sep: str) -> None:
        self.text, self.sep, self.n = text, sep, len(text)

    def last_start(self, lo: int, limit: int) -> int:
        return self.text.rfind(self.sep, lo + 1, min(self.n, limit + len(self.sep)))

    def first_within(self, lo: int, b: int) -> int:
        return self.text.find(self.sep, lo, b)

    def first_after(self, s: int) -> int:
        return self.text.find(self.sep, s + 1)


class _Matches(Occurrences):
    """The matches of a regular expression over the whole document, found once."""

    __slots__ = ("ends", "starts")

    def __init__(self, starts: array, ends: array) -> None:
        self.starts, self.ends = starts, ends  # both ascend: the matches do not overlap

    def last_start(self, lo: int, limit: int) -> int:
        k = bisect.bisect_right(self.starts, limit) - 1
        return self.starts[k] if k >= 0 and self.starts[k] > lo else -1

    def first_within(self, lo: int, b: int) -> int:
        k = bisect.bisect_left(self.starts, lo)
        return self.starts[k] if k < len(self.starts) and self.starts[k] < b and self.ends[k] <= b else -1

    def first_after(self, s: int) -> int:
        k = bisect.bisect_right(self.starts, s)
        return self.starts[k] if k < len(self.starts) else -1


def literal_occurrences(text: str, sep: str) -> Occurrences:
    """:class:`Occurrences` of the literal, non-empty ``sep`` in ``text`` (``str.find``, no index)."""
    return _Literal(text, sep)


def regex_occurrences(text: str, compiled: Any, clock: RegexClock) -> Occurrences:
    """:class:`Occurrences` of a compiled pattern's matches in ``text`` (found once, on the whole text).

    Raises:
        ChunkingError: ``chunker_error`` when the document's search time runs out.
    """
    return _Matches(*clock.matches(compiled, text))
