"""Hugging Face tokenizers that split pre-tokens at spaces, counted from one encoding per document.

Beam-free. The ``tokenizers`` library encodes a text in four steps: added tokens (``<s>``,
``<|endoftext|>``, ...) are split out, the normalizer rewrites the rest, the pre-tokenizer cuts it
into *pre-tokens*, and the model (BPE, Unigram, WordPiece, WordLevel) turns each pre-token into
tokens on its own (the library's ``PreTokenizedString::tokenize`` calls the model once per split).
So where the normalized text is cut into the same pre-tokens with and without a cut, the tokens
of the two sides are the whole text's.

A *space cut* is an offset ``p`` of the text where ``text[p]`` is U+0020 and ``text[p - 1]`` is
not whitespace (Python's ``str.isspace``, a superset of Unicode White_Space and of the pattern
``\\s``), the normalizer ends ``text[p - 1]`` with a character that is not whitespace either, and
``p`` is not next to or inside an added token's text. There the pre-tokenizers this module
accepts (:func:`is_space_local`) end a pre-token and start the next one exactly as in a text that
starts at ``p``, and the normalizers leave the space and both sides as they are alone:

* ``ByteLevel`` with its regex (GPT-2's ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+|
  ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``; Radford et al., 2019): the piece that holds ``text[p - 1]``
  (letters, digits, punctuation or a contraction) never takes a space, so it ends at ``p``; the
  pattern has no lookbehind, so the pieces from ``p`` on depend only on the text from ``p``; a
  whitespace piece never reaches ``p`` (``text[p - 1]`` is not whitespace), so the end of the text
  at ``p`` changes no lookahead. ``add_prefix_space`` adds a space only to a split that does not
  start with one: never to a side that starts at ``p``.
* ``Metaspace`` with ``split``: the space becomes ``▁`` and every ``▁`` starts a pre-token
  (``MergedWithNext``); ``prepend_scheme`` prepends ``▁`` only to a split that does not start
  with it (Kudo and Richardson, SentencePiece, 2018; the library's ``Metaspace``).
* ``Whitespace``, ``WhitespaceSplit``, ``BertPreTokenizer``: whitespace ends every piece and is
  dropped.
* A ``Sequence`` of these, with ``Digits`` and ``Punctuation`` (which cut by character classes and
  change no character) anywhere and ``ByteLevel`` without its regex after a splitter.

Normalizers accepted: none, ``Lowercase`` (one character at a time), ``NFC``/``NFD``/``NFKC``/
``NFKD`` (U+0020 is a starter that composes with nothing before it, so a normalization form of a
text is the forms of the two sides joined; Unicode UAX #15, section 9), ``StripAccents``,
``BertNormalizer`` (one character at a time), ``Replace`` of a string with no whitespace by a
non-empty one with none that the later steps keep non-empty and not ending in whitespace (no match
can hold the space, nor erase the character before it), and a ``Sequence`` of these. Others (``Precompiled``,
``Prepend``, ``Strip``, regex ``Replace``) are not proven here: such a tokenizer counts every
slice by a whole encode.

:class:`SpaceCutSlices` counts a slice as its edges up to the first and from the last space cut
inside it encoded alone (a few characters), plus a difference of token indices of the whole
encoding; ``tests/transforms/tokenizers/test_one_encoding.py`` checks it against whole encodes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from transforms.tokenizers.huggingface import HuggingFaceTokenizer
from transforms.tokenizers.wordpiece import WordPieceSlices, _inside
from transforms.tokenizers.words import SURROGATE, WHITESPACE, WHITESPACE_CHARS, WordEncoder

__all__ = ["SpaceCutSlices", "SpaceCutTokenizer", "is_space_local"]

#: Pre-tokenizers that end a pre-token before a space cut (see the module docstring).
_SPLITTERS = ("ByteLevel", "Metaspace", "Whitespace", "WhitespaceSplit", "BertPreTokenizer")
#: Normalizers that keep a space cut (see the module docstring).
_NORMALIZERS = ("Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents", "BertNormalizer")
_MODELS = ("BPE", "Unigram", "WordPiece", "WordLevel")
_POST = ("TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel")


def _splitter(pre: dict) -> bool:
    kind = pre.get("type")
    if kind == "ByteLevel":
        return pre.get("use_regex", True) is not False
    if kind == "Metaspace":
        return pre.get("split", True) is not False
    return kind in _SPLITTERS


def _pre_tokenizer_ok(pre: dict | None) -> bool:
    if not pre:
        return False
    if pre.get("type") != "Sequence":
        return _splitter(pre)
    split = False
    for step in pre.get("pretokenizers") or []:
        kind = step.get("type")
        if _splitter(step):
            split = True
        elif kind in ("Digits", "Punctuation") or (kind == "ByteLevel" and split):
            continue
        else:
            return False
    return split


def _has_space(s: Any) -> bool:
    return not isinstance(s, str) or any(c.isspace() for c in s)


def _normalizer_ok(normalizer: dict | None) -> bool:
    if normalizer is None:
        return True
    kind = normalizer.get("type")
    if kind == "Sequence":
        return all(_normalizer_ok(step) for step in normalizer.get("normalizers") or [])
    if kind == "Replace":
        pattern = normalizer.get("pattern") or {}
        text = pattern.get("String")
        content = normalizer.get("content")
        # A match erased (empty content) may leave a space cut's left side ending in whitespace:
        # "x ab cd" with "ab" -> "" is "x  cd", whose spaces byte-level BPE may merge.
        return text is not None and bool(text) and bool(content) and not _has_space(text) and not _has_space(content)
    return kind in _NORMALIZERS


def _replacements_kept(normalizer: Any, config: dict | None) -> bool:
    """Whether the content of every ``Replace`` of a ``Sequence`` normalizer stays a non-empty
    text that does not end with whitespace through the steps after it: a match of several
    characters is not seen by :meth:`SpaceCutTokenizer._left_ok`, which probes one character,
    so a content a later step erases (``StripAccents`` of a mark) would leave a space cut's left
    side ending in whitespace."""
    if config is None or config.get("type") != "Sequence":
        return True
    from tokenizers import normalizers

    steps = config.get("normalizers") or []
    for k, step in enumerate(steps):
        if step.get("type") == "Sequence":
            return False  # (nested: not probed here; counted by whole encodes)
        if step.get("type") == "Replace":
            rest = normalizers.Sequence([normalizer[i] for i in range(k + 1, len(steps))])
            kept = rest.normalize_str(step.get("content") or "")
            if not kept or kept[-1].isspace():
                return False
    return True


def _post_ok(post: dict | None) -> bool:
    if post is None:
        return True
    if post.get("type") == "Sequence":
        return all(_post_ok(step) for step in post.get("processors") or [])
    return post.get("type") in _POST


def is_space_local(tokenizer: HuggingFaceTokenizer) -> bool:
    """Whether :class:`SpaceCutTokenizer` counts ``tokenizer`` exactly from one encoding per
    document: a BPE (without dropout), Unigram, WordPiece or WordLevel model, a pre-tokenizer and
    normalizer the module docstring lists, a post-processor that adds the same special tokens to
    every text (or none), added tokens matched on the raw text (``normalized`` only without a
    normalizer), and no prompt (``hf-model:`` with a default prompt is counted by whole encodes).
    """
    config = json.loads(tokenizer._json)
    model = config.get("model") or {}
    if model.get("type") not in _MODELS or model.get("dropout") not in (None, 0, 0.0):
        return False
    if not _pre_tokenizer_ok(config.get("pre_tokenizer")) or not _post_ok(config.get("post_processor")):
        return False
    normalizer = config.get("normalizer")
    if not _normalizer_ok(normalizer) or not _replacements_kept(tokenizer._tokenizer.normalizer, normalizer):
        return False
    for added in config.get("added_tokens") or []:
        if not added.get("content"):
            return False
        if added.get("normalized") and normalizer is not None:
            return False
    return not tokenizer.prompt


class SpaceCutTokenizer(HuggingFaceTokenizer):
    """A :class:`HuggingFaceTokenizer` that :func:`is_space_local` accepts, which also counts
    slices of a document from one encoding of it (:meth:`slice_counter`).

    ``count`` is :class:`HuggingFaceTokenizer`'s, a long text's from its words (:meth:`count`). No
    ``token_ends``: the structure packer adds token ends between line starts, and a line start
    is not a space cut for these tokenizers (``"a\\n\\nb"`` pre-tokenizes ``\\n\\n`` apart in
    GPT-2's pattern), so it counts every candidate chunk whole.

    Attributes:
        constant: Special tokens the post-processor adds to every text (0 for ``hf:``).
    """

    constant: int
    _contents: list[tuple[str, bool, bool]]
    _left: dict[str, bool]
    _steps: list[Any]
    _offsets_tokenizer: Any
    _words: WordEncoder
    _cut_set: frozenset[str]
    _after: bool

    @classmethod
    def of(cls, plain: HuggingFaceTokenizer) -> SpaceCutTokenizer:
        """The :class:`SpaceCutTokenizer` of an already loaded ``plain`` (no second read)."""
        from tokenizers import Tokenizer as _HFTokenizer

        self = cls.__new__(cls)
        self.__dict__.update(plain.__dict__)
        config = json.loads(plain._json)
        self._contents = [
            (a["content"], bool(a.get("lstrip")), bool(a.get("rstrip"))) for a in config.get("added_tokens") or []
        ]
        # Offsets come from a copy without post-processor: ByteLevel's and RoBERTa's trim_offsets
        # move a token's offsets off its spaces; with add_special_tokens=False the tokens are the same.
        config["post_processor"] = None
        offsets = _HFTokenizer.from_str(json.dumps(config))
        offsets.no_truncation()
        offsets.no_padding()
        self._offsets_tokenizer = offsets
        cut, after = _cut_rule(config.get("pre_tokenizer") or {})
        self._cut_set = frozenset(c for c in WHITESPACE_CHARS if re.match("[" + cut + "]", c))
        self._after = after
        contents = [c for c, _, _ in self._contents]
        joinable = None
        if not any(ch.isspace() for c in contents for ch in c):
            # A word that starts with a cut character and ends with a character allowed before a
            # cut meets any other such word at a space cut: such words are encoded together.
            added = re.compile("|".join(map(re.escape, contents))) if contents else None
            cut_set, left_ok = self._cut_set, self._left_ok

            def joinable(word: str) -> bool:
                last = word[-1]
                return (
                    word[0] in cut_set
                    and not last.isspace()
                    and left_ok(last)
                    and (added is None or added.search(word) is None)
                )

        self._words = WordEncoder(
            lambda words: offsets.encode_batch(words, add_special_tokens=False), self._left_ok, cut, after, joinable
        )
        self._left = {}
        self._steps = _normalizer_steps(plain._tokenizer.normalizer, config.get("normalizer"))
        self.constant = self.special_tokens
        return self

    def count(self, text: str) -> int:
        """Return the tokens of ``text`` (as :meth:`HuggingFaceTokenizer.count`): a text of 64
        code points or more as :attr:`constant` plus the tokens of its words (cut at space cuts,
        each distinct word encoded once and remembered), which are the tokens of its own
        encoding; a shorter one by a whole encode. The structure packer, which counts its
        candidate chunks whole with these tokenizers, pays for the words it has not seen."""
        if len(text) >= 64:
            if SURROGATE.search(text):
                from transforms.tokenizers.huggingface import _without_surrogates

                text = _without_surrogates(text)
            own = self._words.count(text, self.added_spans(text))
            if own is not None:
                return self.constant + own
        return super().count(text)

    def _left_ok(self, c: str) -> bool:
        """Whether ``c`` may precede a space cut: not whitespace, and every prefix of the
        normalizer's steps turns it into a non-empty text that does not end with whitespace."""
        known = self._left.get(c)
        if known is None:
            probe = "\ufffd" if "\ud800" <= c <= "\udfff" else c
            known = not probe.isspace()
            for step in self._steps:
                if not known:
                    break
                probe = step.normalize_str(probe)
                known = bool(probe) and not probe[-1].isspace()
            self._left[c] = known
        return known

    def added_spans(self, text: str) -> list[tuple[int, int]]:
        """Where an added token's text occurs in ``text``, widened over the whitespace its
        ``lstrip``/``rstrip`` takes: ``(start, end)`` code points, sorted (usually none)."""
        spans = []
        for content, lstrip, rstrip in self._contents:
            at = text.find(content)
            while at != -1:
                s, e = at, at + len(content)
                if lstrip:
                    while s > 0 and text[s - 1].isspace():
                        s -= 1
                if rstrip:
                    while e < len(text) and text[e].isspace():
                        e += 1
                spans.append((s, e))
                at = text.find(content, at + 1)
        spans.sort()
        return spans

    def safe_cut(self, text: str, p: int, spans, zero=()) -> bool:
        """Whether ``p`` is the end of ``text`` or a space cut of it (the module docstring), not
        inside or at an end of one of ``spans`` (:meth:`added_spans`) nor in ``zero`` (offsets of
        tokens with no text). 0 is never one: a text's first tokens may have no text (a
        prepended ``▁``), so the head of a slice is always encoded."""
        n = len(text)
        if p >= n:
            return p == n and p not in zero
        if p <= 0:
            return False
        before, after = text[p - 1], text[p]
        if after in self._cut_set and not before.isspace():
            known = self._left.get(before)
            if known is None:
                known = self._left_ok(before)
            if not known:
                return False
        elif not (self._after and before in self._cut_set and not after.isspace()):
            return False
        if spans and (_inside(spans, p) or any(s == p or e == p for s, e in spans)):
            return False
        return p not in zero

    def encoding_ends(self, text: str):
        """``(ends, begins, zero)`` of ``text``'s own encoding (no special tokens): per token the
        code-point offset where it ends (numpy ``int64``), whether it starts at a code point no
        earlier token reaches past (``None`` when all do), and the offsets of tokens with no text.

        The text is encoded a word at a time (:class:`~transforms.tokenizers.words.WordEncoder`,
        words cut at space cuts): the same tokens as one encoding of the whole text.
        """
        import numpy as np

        starts, ends = self._starts_ends(text)
        begins = None
        zero: frozenset[int] = frozenset()
        if len(ends):
            reach = np.maximum.accumulate(ends)
            ok = np.ones(len(ends), dtype=np.bool_)
            ok[1:] = starts[1:] >= reach[:-1]
            if not ok.all():
                begins = ok
            empty = starts == ends
            if empty.any():
                zero = frozenset(ends[empty].tolist())
        return ends, begins, zero

    def boundaries(self, text: str) -> list[int]:
        """Return the code-point offsets where a token of the text's own encoding starts, plus 0
        and ``len(text)``: :meth:`HuggingFaceTokenizer.boundaries`, from offsets no
        post-processor moved off a token's spaces (``trim_offsets``), as :meth:`encoding_ends`
        reads them (a token that starts inside a code point, or where an earlier token reaches
        past, offers no cut)."""
        import numpy as np

        starts, ends = self._starts_ends(text)
        keep = np.ones(len(starts), dtype=np.bool_)
        if len(starts):
            keep[1:] = starts[1:] >= np.maximum.accumulate(ends)[:-1]
        found = starts[keep & (starts > 0) & (starts < len(text))]
        return [0, *np.unique(found).tolist(), len(text)] if len(text) else [0]

    def _starts_ends(self, text: str):
        if SURROGATE.search(text):
            from transforms.tokenizers.huggingface import _without_surrogates

            text = _without_surrogates(text)
        return self._words.ends(text, self.added_spans(text))

    def slice_counter(self, text: str) -> SpaceCutSlices:
        """Encode ``text`` once; then count any slice of it exactly (see :class:`SpaceCutSlices`).

        Memory: 8 bytes per token of ``text``, besides the text."""
        ends, begins, zero = self.encoding_ends(text)
        return SpaceCutSlices(self, text, ends, begins, self.added_spans(text), zero)


def _cut_rule(pre: dict) -> tuple[str, bool]:
    """``(cut_chars, after)`` of the first splitter of ``pre`` (see :class:`WordEncoder`): before
    whitespace for ``ByteLevel``'s regex (its pieces never take whitespace after a character that
    is not whitespace, and a whitespace piece is read from its own start; only before a space
    with ``add_prefix_space``, which would give a side that starts with other whitespace a space),
    before a space for ``Metaspace``, before and after whitespace for the splitters that drop it."""
    if pre.get("type") == "Sequence":
        pre = next(step for step in pre["pretokenizers"] if _splitter(step))
    kind = pre.get("type")
    if kind == "Metaspace" or (kind == "ByteLevel" and pre.get("add_prefix_space", True)):
        return " ", False
    return WHITESPACE, kind != "ByteLevel"


def _normalizer_steps(normalizer: Any, config: dict | None) -> list:
    """The normalizer as a list of steps (a ``Sequence``'s, or itself), for :meth:`_left_ok`."""
    if normalizer is None or config is None:
        return []
    if config.get("type") == "Sequence":
        from tokenizers import normalizers

        return [normalizers.Sequence([normalizer[i] for i in range(k + 1)]) for k in range(len(config["normalizers"]))]
    return [normalizer]


class SpaceCutSlices(WordPieceSlices):
    """Exact counts (``SpaceCutTokenizer.count``) of any slice of one text, from one encoding.

    ``count(a, b)`` equals ``tokenizer.count(text[a:b])`` for every ``0 <= a <= b <= len(text)``:
    :attr:`SpaceCutTokenizer.constant` plus the slice's own tokens, which are its edges up to the
    first and from the last space cut inside it encoded alone, plus the difference of the whole
    encoding's token indices at those cuts (the module docstring says why). A slice with no
    space cut within :data:`EDGE_CHARS` code points of its start is encoded whole.

    ``begins`` is ``None`` or, per token, whether it starts at a code point no earlier token
    reaches past (byte-level tokens of one character share its offsets).
    """

    def __init__(self, tokenizer: SpaceCutTokenizer, text: str, ends: Any, begins: Any, spans, zero) -> None:
        super().__init__(tokenizer, text, ends, spans)  # type: ignore[arg-type]
        self.begins = begins
        self._zero = zero
        self._space = tokenizer

    def safe_cut(self, p: int) -> bool:
        """Whether ``p`` is the end of the text or a space cut of it."""
        return self._space.safe_cut(self.text, p, self._spans, self._zero)

    _safe = safe_cut

    def count_from(self, a: int, tokens_a: int, a_safe: bool, b: int) -> tuple[int, int]:
        """``(count(a, b), t)`` as :meth:`WordPieceSlices.count_from`; ``a_safe`` is looked at
        again (a caller may take an offset after a line feed as safe, which is no space cut)."""
        return super().count_from(a, tokens_a, self.safe_cut(a), b)
