"""Where a window of the windowed Markdown parse ends, without parsing: its size and the weight of its lines.

The parser's tree of a window grows with the window's lines more than with its characters (a
list of short items or a table of short rows takes kilobytes a line; a row of a wide table as
many cells as its delimiter row has; a line opening many lists two nodes per list), so a window
ends at ``WINDOW_CHARS`` code points or once its lines weigh ``WINDOW_LINES``, whichever comes
first (:func:`_window_end`). The sizes are attributes of
:mod:`transforms.structure.normalizers.markdown`, read when used.

``markdown_windows`` (top-level blocks) and ``markdown_streams`` (a long list's items, a long
table's rows) call :func:`_window_end`; ``markdown._parsed_in_windows`` uses the same line
weights to decide whether a short document is parsed in windows at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

from transforms.structure.normalizers import markdown
from transforms.structure.tree import LINE_BREAK, count_line_breaks


def _window_end(source: str, start: int, size: int) -> int:
    """The end of a window from ``start`` (a line start): after the first line break at or past
    ``start + size`` code points, or earlier, at a line start, once the lines with text (not only
    spaces and tabs; blank lines make no parse tree) weigh more than ``WINDOW_LINES * size //
    WINDOW_CHARS``; ``len(source)`` when neither is in the text. The window holds at least one
    line with text.

    A line weighs one, plus half its container markers when it opens :data:`NESTED_LINE_MARKERS`
    or more containers (``"- - - x"``: every list on it is two parser nodes; ``"> > > x"`` after
    a blank line opens as many quotes). When the window holds a
    GFM delimiter row of ``w`` columns or more, each line weighs ``w`` cells, of which it may hold
    ``WINDOW_CELLS`` (more in proportion for a window larger than ``WINDOW_CHARS``; the parser
    gives every row of a table as many cells as its delimiter row has, however short the row).
    """
    n = len(source)
    end = n
    if start + size < n:
        line_break = LINE_BREAK.search(source, start + size)
        end = line_break.end() if line_break else n
    lines = max(1, markdown.WINDOW_LINES * size // markdown.WINDOW_CHARS)
    end = _after_text_lines(source, start, end, lines)
    # Dense lines are looked for only where the window can still end: it only gets shorter.
    width = _widest_delimiter_row(source, start, end)
    cells = markdown.WINDOW_CELLS * max(size, markdown.WINDOW_CHARS) // markdown.WINDOW_CHARS
    if width * lines > cells:
        lines = max(1, cells // width)
    nested = _nested_lines(source, start, end)
    heavy = next(nested, None)
    if heavy is None:
        return _after_text_lines(source, start, end, lines)
    weight = 0
    for at in _text_lines(source, start, end):
        while heavy is not None and heavy[0] < at:
            heavy = next(nested, None)
        weight += 1 + (heavy[1] if heavy is not None and heavy[0] == at else 0)
        if weight > lines and at > start:
            return at
    return end


def _after_text_lines(source: str, start: int, end: int, lines: int) -> int:
    """The start of the line with text number ``lines + 1`` in ``source[start:end]``, or ``end``."""
    if count_line_breaks(source, start, end) > lines:
        beyond = next(islice(_text_lines(source, start, end), lines, None), None)
        if beyond is not None:
            return beyond
    return end


#: A line opening this many containers or more weighs more than one line (see :func:`_window_end`).
NESTED_LINE_MARKERS = 8

_CONTAINER_MARKER = r"(?:>|[-+*]|\d{1,9}[.)])"
# A line opening NESTED_LINE_MARKERS containers or more (found as _DEEP_CANDIDATE finds lines:
# a literal line break first, and a lookahead that turns most lines away at once).
_NESTED_LINE_BODY = r"(?=[ \t>+*\-\d])(?:[ \t]*%s(?=[ \t>\r\n]|\Z)){%d,}" % (_CONTAINER_MARKER, NESTED_LINE_MARKERS)
_NESTED_LINE = re.compile(r"[\r\n]" + _NESTED_LINE_BODY)
_NESTED_LINE_LF = re.compile(r"\n" + _NESTED_LINE_BODY)  # three times faster: for text without "\r"
_NESTED_LINE_AT = re.compile(_NESTED_LINE_BODY)
#: A table narrower than this never weighs more than its lines: at the default sizes a line of a
#: window may hold WINDOW_CELLS // WINDOW_LINES = 8 cells (a window of other size, more).
WIDE_TABLE_COLUMNS = 9
# A GFM delimiter row (after the ">" of quotes it is in): its pipes bound its columns. Possessive
# quantifiers: a line of many spaces is given up in one pass.
_DELIMITER_ROW_BODY = r"[ \t>]*+\|?[ \t]*+:?-++:?[ \t]*+\|[-:| \t]*+(?=[\r\n]|\Z)"
_DELIMITER_ROW = re.compile(r"[\r\n]" + _DELIMITER_ROW_BODY)
_DELIMITER_ROW_AT = re.compile(_DELIMITER_ROW_BODY)
# What a delimiter row of WIDE_TABLE_COLUMNS columns or more holds, with or without its outer
# pipes: that many cells less two between pipes (a pattern that starts with a literal character
# is searched for fast).
_WIDE_DELIMITER = re.compile(r"\|(?:[ \t]*+:?-++:?[ \t]*+\|){%d}" % (WIDE_TABLE_COLUMNS - 2))


def _line_matches(pattern: re.Pattern, at_start: re.Pattern, source: str, start: int, end: int) -> Iterator[re.Match]:
    """Matches of a line pattern (``at_start``; ``pattern`` is it behind a line break) at the
    lines that start in ``source[start:end]`` (``start`` a line start)."""
    if start == 0:
        first = at_start.match(source, 0, end)
        if first is not None:
            yield first
        yield from pattern.finditer(source, 0, end)
    else:
        yield from pattern.finditer(source, start - 1, end)


def _widest_delimiter_row(source: str, start: int, end: int) -> int:
    """An upper bound on the columns of the widest GFM delimiter row starting in ``source[start:end]``
    (its pipes plus one), 0 when there is none of :data:`WIDE_TABLE_COLUMNS` columns or more."""
    if _WIDE_DELIMITER.search(source, start, end) is None:
        return 0
    return max(
        (m.group().count("|") + 1 for m in _line_matches(_DELIMITER_ROW, _DELIMITER_ROW_AT, source, start, end)),
        default=0,
    )


def _nested_lines(source: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """``(line start, extra weight)``, in order, of the lines in ``source[start:end]`` that open
    :data:`NESTED_LINE_MARKERS` containers or more: half their markers (counted as words:
    ``">>"`` is one)."""
    pattern = _NESTED_LINE if source.find("\r", max(start - 1, 0), end) != -1 else _NESTED_LINE_LF
    for m in _line_matches(pattern, _NESTED_LINE_AT, source, start, end):
        text = m.group()
        at = m.start() + 1 if text[:1] in ("\r", "\n") else m.start()
        yield at, len(text.split()) // 2


#: The start of a line with text: after a line break (or at the text's start), optional spaces
#: and tabs, then anything else.
_TEXT_LINE = re.compile(r"(?:\A|(?<=[\r\n]))(?=[ \t]*[^ \t\r\n])")
# The same after a "\n", for text without "\r" (a literal first character: found 15 times faster).
_TEXT_AFTER_LF = re.compile(r"\n(?=[ \t]*[^ \t\r\n])")
_HAS_TEXT = re.compile(r"[ \t]*[^ \t\r\n]")


def _text_lines(source: str, start: int, end: int) -> Iterator[int]:
    """The starts of the lines with text in ``source[start:end]`` (``start`` a line start), in order."""
    if source.find("\r", start, end) != -1:
        for line in _TEXT_LINE.finditer(source, start, end):
            yield line.start()
        return
    if _HAS_TEXT.match(source, start, end):
        yield start
    for line in _TEXT_AFTER_LF.finditer(source, start, end):
        yield line.end()


# A blank line (only spaces and tabs) after a line break: where HTML blocks of kinds 6 and 7 end.
_BLANK_LINE = re.compile(r"(?>\r\n?|\n)[ \t]*(?=[\r\n]|\Z)")
