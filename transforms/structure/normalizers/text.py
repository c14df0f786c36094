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
    lines, starts = split_lines(content)
    blocks: list[Node] = []
    run_start = -1  # index of the first line of the open paragraph, or -1
    for index, line in enumerate(lines):
        if line and not line.isspace():
            if run_start < 0:
                run_start = index
        elif run_start >= 0:
            last = index - 1
            blocks.append(Node("paragraph", starts[run_start], starts[last] + len(lines[last])))
            run_start = -1
    if run_start >= 0:
        last = len(lines) - 1
        blocks.append(Node("paragraph", starts[run_start], starts[last] + len(lines[last])))
    return NormalizedDocument(text=content, blocks=tuple(blocks), content_format="text", verbatim=True)
