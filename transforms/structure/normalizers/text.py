"""Plain text into paragraphs.

Recognized: paragraphs only. A paragraph is a maximal run of lines that each contain a
non-whitespace character (``str.isspace`` decides what is whitespace); lines made only of
whitespace separate paragraphs and belong to no block. Nothing else is interpreted: headings,
lists, tables or indented code in plain text stay ordinary paragraph lines.

Lines end at ``"\\n"``, ``"\\r\\n"`` or a lone ``"\\r"`` and nowhere else (unlike
``str.splitlines``, which also breaks at ``"\\x0b"``, ``"\\x0c"``, ``"\\x1c"``, ``"\\u2028"`` ...).
``text`` is the content unchanged; intervals are in code points and exclude the line break that
ends a paragraph's last line.
"""

from __future__ import annotations

import re
from itertools import accumulate

from transforms.structure.tree import LINE_BREAK, Node, NormalizedDocument

__all__ = ["normalize_text", "split_lines"]


def split_lines(text: str) -> tuple[list[str], list[int]]:
    """Split ``text`` into lines at ``"\\n"``, ``"\\r\\n"`` and lone ``"\\r"`` only.

    Returns:
        ``(lines, starts)``: each line without its line break, and the code-point offset of each
        line's first character in ``text``. A trailing line break yields a final empty line, so
        ``len(lines)`` is the number of line breaks plus one.
    """
    if "\r" not in text:
        lines = text.split("\n")
    else:
        lines = LINE_BREAK.split(text)
        if len(lines) > 1:
            breaks = LINE_BREAK.findall(text)
            starts = [0]
            position = 0
            for line, line_break in zip(lines, breaks):
                position += len(line) + len(line_break)
                starts.append(position)
            return lines, starts
    starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    return lines, starts


def normalize_text(content: str) -> NormalizedDocument:
    """Normalize plain text: every run of non-blank lines is one ``paragraph`` block.

    Args:
        content: The text.

    Returns:
        A verbatim :class:`NormalizedDocument` (``text`` is ``content``) whose blocks are the
        paragraphs in order; intervals in code points.
    """
    if "\n" not in content and "\r" not in content:
        # One line (a title, a short note): one paragraph of all of it, or none if it is blank.
        one = (Node("paragraph", 0, len(content)),) if _NON_SPACE.search(content) else ()
        return NormalizedDocument(text=content, blocks=one, content_format="text", verbatim=True)
    blocks: list[Node] = []
    run_start = -1  # start of the open paragraph, or -1
    run_end = 0  # end of its last line so far
    line_start = 0
    # Lines are visited one at a time (never all held as strings: a long text stays one copy).
    for line_break in _line_breaks(content):
        line_end = line_break.start() if line_break is not None else len(content)
        if _NON_SPACE.search(content, line_start, line_end):
            if run_start < 0:
                run_start = line_start
            run_end = line_end
        elif run_start >= 0:
            blocks.append(Node("paragraph", run_start, run_end))
            run_start = -1
        line_start = line_break.end() if line_break is not None else len(content)
    if run_start >= 0:
        blocks.append(Node("paragraph", run_start, run_end))
    return NormalizedDocument(text=content, blocks=tuple(blocks), content_format="text", verbatim=True)


_NON_SPACE = re.compile(r"\S")


def _line_breaks(text: str):
    """Every line break of ``text`` as a match, then ``None`` for the last line."""
    yield from LINE_BREAK.finditer(text)
    yield None
