"""Where a cl100k_base encoding can be cut: offsets at which a text's tokenization cannot change.

Beam-free. A *safe cut* at code-point offset ``p`` of a text is one where the tokens of
``text[:p]`` followed by those of ``text[p:]`` are the whole text's cl100k_base tokens. The
segmented encoder (:mod:`transforms.tokenizers.segments`) cuts long texts only there, and
:class:`~transforms.tokenizers.slices.SliceCounter` counts a slice as a difference of token
indices between two of them. Three families:

* :data:`SAFE_CUT` -- pre-token boundaries of cl100k_base's pattern in any text (after a line
  feed before a non-space, before a space after a non-space);
* :func:`alnum_cut` -- the end of an ASCII letter or digit run before another ASCII character;
* :func:`token_start_cut` -- cuts inside a pre-token, valid only where a token of the whole
  encoding starts.

Why a cut at a token start inside a pre-token is safe (the reasoning behind
:func:`token_start_cut`). (1) BPE: within one piece tiktoken merges, leftmost first, the adjacent
pair whose bytes form the lowest-ranked token; any consecutive tokens of that result are the BPE
result of their own bytes (rust-gems ``bpe``, "Corollary II": no merge crossed their outer
boundaries, and every merge within them was the lowest-ranked one available there). tiktoken
gives a piece that is itself a token that token without merging, which agrees because every
cl100k_base token is its own BPE result (``tests/test_tokenizers.py`` checks all 100,256). So a
piece cut at a token start encodes as the whole piece's tokens on each side. (2) The pattern:
the pieces of ``text[p:]`` are the whole text's from ``p`` on, the piece around ``p`` starting
at ``p``: the pattern has no lookbehind; in a letter run the letter piece (``\\p{L}++``,
possessive) runs on to the run's end as in the whole text, and no contraction starts there
(``after`` is a letter, or a digit, or punctuation that is not an apostrophe); a digit run starts
its groups of three at ``p``, where the whole text's digit run starts too (punctuation precedes
``p``); in a punctuation run the punctuation piece runs on as in the whole text, and the letter
piece, whose optional first character ``after`` could be, does not match (no letter follows). The
pieces of ``text[:p]`` are the whole text's up to ``p``, the last one cut there: each alternative
of the pattern reads one class of characters (letters, digits, punctuation, whitespace) and at
most one character past its run, except the letter piece's optional first character and the
contraction's two or three characters; so what an alternative tried before ``p`` finds depends on
the text after ``p`` only through a letter piece that starts at the punctuation before ``p`` (it
becomes a one-character punctuation piece, the same one-byte token) or a contraction (none can
reach ``p``: no apostrophe two letters before ``p``, none before ``p`` in the other cases); and
none of these pieces is whitespace that ``\\s++$`` would take.
"""

from __future__ import annotations

import re

__all__ = [
    "ASCII_PUNCTUATION",
    "SAFE_CUT",
    "alnum_cut",
    "cut_at",
    "last_safe_cut",
    "last_safe_cut_near",
    "token_start_cut",
]

# Where cl100k_base's pre-tokenizer ends a piece in any text, and starts the next piece exactly as
# it would in a text that begins there (its pattern's pieces from a position depend only on what
# follows; only where the last piece ends can the text's end matter):
# - after a line feed followed by a non-space character: the whitespace before it ends with the
#   line break (or punctuation took the line breaks), and that piece is the same when the text
#   ends there (``\s++$`` then takes what ``\s*[\r\n]`` would);
# - before a space that follows a non-space character: a letter, digit or punctuation piece
#   never takes a space at its end (its possessive runs stop there), with or without what follows.
# Python's \s is a superset of the pattern's \s (Unicode White_Space; tested), so \S here is
# never pattern whitespace.
# A match is the line feed before the cut, or the space after it (see cut_at).
SAFE_CUT = re.compile(r"[\n ](?:(?<=\n)(?=\S)|(?<=\S ))")


def cut_at(match: re.Match) -> int:
    """The cut position of a :data:`SAFE_CUT` match: after its line feed, or before its space."""
    return match.start() if match.group() == " " else match.end()


def last_safe_cut(text: str, lo: int, hi: int) -> int | None:
    """The largest safe cut position in ``(lo, hi]``, or ``None``."""
    for width in (512, 4096, hi - lo):
        last = None
        # endpos hi + 2: the lookahead of a cut at hi sees the characters it needs.
        for match in SAFE_CUT.finditer(text, max(lo, hi - width), hi + 2):
            cut = cut_at(match)
            if cut > hi:
                break
            if cut > lo:
                last = cut
        if last is not None:
            return last
    return None


def last_safe_cut_near(text: str, lo: int, hi: int) -> int | None:
    """The largest :data:`SAFE_CUT` position in ``(lo, hi]`` (``hi < len(text)``), or ``None``.

    The same cuts as :func:`last_safe_cut`, found by looking back from ``hi`` for a space or a
    line feed (``str.rfind``), which is quicker when one is a few characters away.
    """
    c = hi
    while c > lo:
        space = text.rfind(" ", lo + 1, c + 1)  # a cut before a space at `space`
        feed = text.rfind("\n", lo, c) + 1  # a cut after a line feed, at `feed` (0: none)
        cut = max(space, feed)
        if cut <= lo:
            return None
        if (cut == space and not text[cut - 1].isspace()) or (cut == feed and not text[cut].isspace()):
            return cut
        c = cut - 1
    return None


_BLANKS = re.compile("[ \t]*")
ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def alnum_cut(before: str, after: str) -> bool:
    """Whether a cut between the characters ``before`` and ``after`` is safe by the letter and
    digit rule: ``before`` an ASCII letter or digit, ``after`` an ASCII character that does not
    continue its run (not a letter after a letter, not a digit after a digit).

    cl100k_base's pattern ends a letter run (``\\p{L}++``) at any non-letter and a digit run
    (``\\p{N}{1,3}+``, grouped from its start) at any non-digit, and no piece that holds a letter
    or digit also holds what follows such a run: punctuation starts its own piece (the letter
    piece's optional first character precedes its letters), whitespace and line breaks start
    theirs, and a contraction (``'s``) starts at its apostrophe. The pattern has no lookbehind,
    so the pieces from the cut on are those of the text that starts there; and the pieces before
    it ended where they end in the text that ends there (none is whitespace that ``\\s++$`` could
    take). Non-ASCII neighbours (letters, combining marks, other digits) are left out.
    ``tests/test_tokenizers.py`` checks slices cut here against whole encodings.
    """
    if before >= "\x80" or after >= "\x80" or not before.isalnum():
        return False
    return not after.isalnum() or after.isalpha() != before.isalpha()


def token_start_cut(text: str, p: int) -> bool:
    """Whether a cut at code-point offset ``p`` (``0 < p < len(text)``), where a token of the
    whole text's cl100k_base encoding starts, is safe although it may fall inside a pre-token (a
    piece of cl100k_base's pattern): the tokens of ``text[:p]`` and of ``text[p:]`` are then the
    whole encoding's tokens before and after ``p``. Only for token starts: inside a piece, an
    offset where no token starts is never a safe cut. The module docstring gives the reasoning.

    Besides :func:`alnum_cut`, with ``before = text[p - 1]`` and ``after = text[p]`` ASCII:

    * inside a letter run (two letters) that is not within two letters of an apostrophe before
      it (``'s``, ``'ll``, ``'re``: a contraction piece may end inside the run);
    * after ASCII punctuation other than ``'``, before a letter or digit;
    * inside a punctuation run (two punctuation characters, ``after`` not ``'``), when the
      character after ``after`` is ASCII and not a letter (or there is none);

    and four cuts that are piece boundaries of the whole text (safe by the pattern alone):

    * inside a run of ASCII digits, a multiple of three digits after its start (digits are
      grouped by three from the run's start, ``\\p{N}{1,3}+``), the run not preceded by a
      non-ASCII character;
    * after a space that follows a non-space character, before a digit (the space is a piece
      of its own, ``\\s``, and ``\\s++$`` takes the same one space from the text that ends there);
    * after a line feed, before spaces or tabs that end at a non-space character (no line break
      among them: ``\\s*[\\r\\n]`` ends the whitespace before them at that line feed, as
      ``\\s++$`` does in the text that ends there);
    * between two spaces, the second followed by a non-space character, in a run of spaces that
      follows a non-space character, a line break or the text's start: ``\\s+(?!\\S)`` leaves
      the run's last space to the next piece, and ``\\s++$`` takes the same spaces from the
      text that ends there; after a line break it takes the whitespace up to that line break
      too (one piece where the whole text has two, ``\\s*[\\r\\n]`` and the spaces), which
      BPE splits at the line break all the same, because no cl100k_base token ends with a line
      break followed by spaces or tabs (so none, and no merge, spans it; tested).
    """
    before, after = text[p - 1], text[p]
    if before >= "\x80" or after >= "\x80":
        return False
    if before.isalnum():
        return _cut_after_alnum(text, p, before, after)
    if before == " ":
        return _cut_after_space(text, p, after)
    if before == "\n":
        if after in " \t":
            blanks = _BLANKS.match(text, p)  # always a match (maybe empty)
            end = blanks.end() if blanks else p
            return end < len(text) and not text[end].isspace()
        return False
    if before in ASCII_PUNCTUATION:
        if after.isalnum():
            return before != "'"
        if after in ASCII_PUNCTUATION and after != "'":
            following = text[p + 1 : p + 2]
            return following < "\x80" and not following.isalpha()
    return False


def _cut_after_alnum(text: str, p: int, before: str, after: str) -> bool:
    """:func:`token_start_cut` after an ASCII letter or digit: the run rules and :func:`alnum_cut`."""
    if not after.isalnum() or after.isalpha() != before.isalpha():
        return True  # alnum_cut
    if before.isalpha():
        return "'" not in text[max(p - 3, 0) : p - 1]
    start = p - 1  # two digits: the start of their run
    while start > 0 and "0" <= text[start - 1] <= "9":
        start -= 1
    return (p - start) % 3 == 0 and (start == 0 or text[start - 1] < "\x80")


def _cut_after_space(text: str, p: int, after: str) -> bool:
    """:func:`token_start_cut` after a space: before a digit, or inside a run of spaces."""
    if "0" <= after <= "9":
        return p < 2 or not text[p - 2].isspace()
    if after == " " and p + 1 < len(text) and not text[p + 1].isspace():
        start = p - 1  # the run of spaces before p: after a non-space character or a line break
        while start > 0 and text[start - 1] == " ":
            start -= 1
        return start == 0 or not text[start - 1].isspace() or text[start - 1] in "\r\n"
    return False
