"""Tests of the plain-text splitters: exact small cases, output invariants as properties, errors."""

from __future__ import annotations

import random
import re
import string
from itertools import pairwise
from typing import Any

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiktoken.load import load_tiktoken_bpe

from transforms.chunkers.text import (
    CharacterTextSplitter,
    RecursiveCharacterTextSplitter,
    TokenTextSplitter,
)
from transforms.documents import Document
from transforms.tokenizers import TiktokenTokenizer, Utf8ByteTokenizer, tiktoken_ranks

CORPUS_IDS = [
    "md/metadata/annotated_types-0.8.0.dist-info.md",
    "md/pghtml2md/sql-droptsdictionary.md",
    "txt/gitdoc/git-fsck.txt",
    "txt/metadata/websockets-17.4.dist-info.txt",
    "txt/pyrst/howto/unicode.rst.txt",
    "html/pgdoc/catalog-pg-policy.html",
]

TOK = TiktokenTokenizer("cl100k_base")


@pytest.fixture(scope="module")
def reference_count():
    """An independent cl100k_base count: tiktoken's own definition and loader, nothing of ours."""
    from tiktoken_ext import openai_public

    path = tiktoken_ranks.bundled_ranks_path("cl100k_base.tiktoken")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", "")
        ranks = load_tiktoken_bpe(path, expected_hash=tiktoken_ranks.ENCODINGS["cl100k_base"]["sha256"])
        mp.setattr(openai_public, "load_tiktoken_bpe", lambda url, expected_hash=None: ranks)
        encoding = tiktoken.Encoding(**openai_public.cl100k_base())
    return lambda text: len(encoding.encode_ordinary(text))


@pytest.fixture(scope="module")
def corpus(shared_data) -> list[Document]:
    pq = pytest.importorskip("pyarrow.parquet")
    rows = pq.read_table(
        shared_data("corpus/docs_small.parquet"), columns=["id", "content", "content_format"]
    ).to_pylist()
    by_id = {r["id"]: r for r in rows}
    return [Document(id=i, content=by_id[i]["content"], content_format=by_id[i]["content_format"]) for i in CORPUS_IDS]


def texts(chunker, text: str) -> list[str]:
    return [piece.text for piece in chunker.split(Document(id="d", content=text))]


def recursive(**kw) -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(**kw)


def recursive_tokens(**kw) -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(length="tokens", tokenizer=TOK, **kw)


# --------------------------------------------------------------------------------------------
# Exact chunks on small, hand-checked inputs
# --------------------------------------------------------------------------------------------

PARAGRAPHS = "Hello world. This is a test.\n\nSecond paragraph here."
SENTENCE = "The quick brown fox jumps over the lazy dog."  # 10 cl100k tokens, " dog." is 2


@pytest.mark.parametrize(
    ("chunk_size", "chunk_overlap", "expected"),
    [
        # Paragraph 1 (28) is split at spaces: Hello|_world.|_This|_is|_a|_test. (5,7,5,3,2,6).
        # Paragraph 2 keeps "\n\n" at its start: "\n" alone, then \nSecond|_paragraph|_here.
        (20, 0, ["Hello world. This is", "a test.", "Second paragraph", "here."]),
        # Overlap 8 carries "_This_is" (5+3), not "_world." as well (7+8 > 8).
        (20, 8, ["Hello world. This is", "This is a test.", "Second paragraph", "here."]),
        (100, 0, [PARAGRAPHS]),
        (30, 0, ["Hello world. This is a test.", "Second paragraph here."]),
    ],
)
def test_recursive_characters_exact(chunk_size, chunk_overlap, expected):
    assert texts(recursive(chunk_size=chunk_size, chunk_overlap=chunk_overlap), PARAGRAPHS) == expected


@pytest.mark.parametrize(
    ("chunk_size", "chunk_overlap", "expected"),
    [
        (4, 0, ["abcd", "efgh", "ij"]),
        # Inside a word the overlap is carried too, code point by code point (LangChain's list(text)).
        (4, 2, ["abcd", "cdef", "efgh", "ghij"]),
        (5, 1, ["abcde", "efghi", "ij"]),
    ],
)
def test_recursive_characters_cut_anywhere_with_overlap(chunk_size, chunk_overlap, expected):
    splitter = recursive(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    assert texts(splitter, "abcdefghij") == expected


def test_recursive_without_a_matching_separator_keeps_the_text_whole():
    # As LangChain: no listed separator occurs, so the last one "splits" it into one piece, and
    # without "" in the list an oversized piece is not cut.
    splitter = recursive(separators=["\n\n"], chunk_size=4, chunk_overlap=0)
    assert texts(splitter, "abcdefghij") == ["abcdefghij"]
    assert texts(splitter, "ab\n\ncdefghij") == ["ab", "cdefghij"]
    splitter = recursive(separators=["\n\n", "\n"], chunk_size=4, chunk_overlap=0)
    assert texts(splitter, "abcdefghij") == ["abcdefghij"]


def test_recursive_custom_separators():
    splitter = recursive(separators=[", ", ""], chunk_size=6, chunk_overlap=0)
    assert texts(splitter, "aa, bb, cc, dddddddd") == ["aa, bb", ", cc", ", dddd", "dddd"]


def test_recursive_crlf_and_blank_runs():
    assert texts(recursive(chunk_size=8, chunk_overlap=0), "ab\r\ncd\r\n\r\nef") == ["ab\r\ncd", "ef"]
    assert texts(recursive(chunk_size=5, chunk_overlap=0), "ab\r\ncd\r\n\r\nef") == ["ab", "cd", "ef"]
    assert texts(recursive(chunk_size=3, chunk_overlap=0), "a\n\n\n\nb\n\n\n\n\n\nc") == ["a", "b", "c"]
    assert texts(recursive(chunk_size=3, chunk_overlap=0), "\n\n\n\n") == []


@pytest.mark.parametrize(
    ("chunk_overlap", "expected"),
    [
        (0, ["The quick brown fox jumps", "over the lazy dog."]),
        # Carried: "_fox_jumps" (2 tokens); then "_the_lazy" (2), which leaves room for "_dog." (2).
        (2, ["The quick brown fox jumps", "fox jumps over the lazy", "the lazy dog."]),
    ],
)
def test_recursive_tokens_exact(chunk_overlap, expected):
    chunks = texts(recursive_tokens(chunk_size=5, chunk_overlap=chunk_overlap), SENTENCE)
    assert chunks == expected
    assert all(TOK.count(c) <= 5 for c in chunks)


LINES = "One two.\nThree four five.\n\nSix seven eight."
# cl100k tokens: One|_two|.\n|Three|_four|_five|.\n\n|Six|_seven|_eight|.  (11; ".\n\n" is one)


@pytest.mark.parametrize(
    ("chunk_size", "chunk_overlap", "expected"),
    [
        # From 0 the budget runs out after token 6 ("_five"): no "\n\n" before it, the last "\n"
        # is after "two.", so the chunk is "One two." (3). From "Three" (token 3) the budget runs
        # out after token 8 ("_seven"): "\n\n" is in that window, the cut is there (4).
        (6, 0, ["One two.", "Three four five.", "Six seven eight."]),
        # Budget to token 9 ("_seven"): "\n\n" beats the later " " and "\n" (7, then 4).
        (9, 0, ["One two.\nThree four five.", "Six seven eight."]),
        # The rest fits: no search at all (11 tokens).
        (12, 0, [LINES]),
        # Overlap 3: the last 3 tokens of "One ... five." (6 tokens, ".\n\n" is past its end)
        # start at "Three"; the first separator there in order is " " before "four" (no "\n\n" or
        # "\n" after "Three"), and "four five." is 3 tokens <= 3. From "four" the budget (9) runs
        # out at the end; 7 tokens.
        (9, 3, ["One two.\nThree four five.", "four five.\n\nSix seven eight."]),
    ],
)
def test_recursive_tokens_search_back(chunk_size, chunk_overlap, expected):
    chunks = texts(recursive_tokens(chunk_size=chunk_size, chunk_overlap=chunk_overlap), LINES)
    assert chunks == expected
    assert [TOK.count(c) for c in chunks] == {6: [3, 4, 4], 9: [7, 4] if not chunk_overlap else [7, 7], 12: [11]}[
        chunk_size
    ]


def test_recursive_tokens_cut_anywhere_and_oversized_word():
    # sup|erc|al|if|rag|il|istic|_alpha: with "" the budget (2) ends each chunk where the whole
    # encoding's second token ends, each chunk counted exactly (2); "istic alpha" is the rest.
    text = "supercalifragilistic alpha"
    assert texts(recursive_tokens(chunk_size=2, chunk_overlap=0), text) == ["superc", "alif", "ragil", "istic alpha"]
    # Without "": no separator before where the budget runs out, so the word up to the nearest
    # separator is kept whole (7 tokens; validation rejects it), as in characters.
    splitter = RecursiveCharacterTextSplitter(
        separators=["\n\n", "\n", " "], chunk_size=2, chunk_overlap=0, length="tokens", tokenizer=TOK
    )
    assert texts(splitter, text) == ["supercalifragilistic", "alpha"]


def test_recursive_tokens_overlap_must_reach_past_the_previous_chunk():
    # ab|_|123|456|789|_|_\xc4|\x9e. "123456" ends where the budget (2) runs out; its last token
    # "456" starts the next chunk (overlap 1), which ends before the spaces: "456789". Its last
    # token "789" would start a chunk that cannot reach past it ("789" plus " " is the budget,
    # and the next text, "Ğ", is after the spaces): so the next chunk starts after it instead.
    text = "ab 123456789  Ğ"
    assert texts(recursive_tokens(chunk_size=2, chunk_overlap=1), text) == ["ab", "123456", "456789", "Ğ"]


def test_token_windows_reach_past_the_previous_one():
    # &|:|A|0|:|\xc2|\x81 in the whole encoding (7 tokens, the last two one code point). The
    # first window is 5 tokens; ":A0:\x81" alone is 5 tokens (not 6), so the next window starts
    # at ":" (overlap 4) and must end past 5: at the end, not at the last token start before it.
    assert texts(TokenTextSplitter(chunk_size=5, chunk_overlap=4, tokenizer=TOK), "&:A0:\x81") == ["&:A0:", ":A0:\x81"]
    # A 4-byte code point is 4 tokens, none of them but the first starting a code point.
    assert texts(TokenTextSplitter(chunk_size=1, chunk_overlap=0, tokenizer=TOK), "\U000ea73d\u0101") == [
        "\U000ea73d",
        "\u0101",
    ]


def test_recursive_tokens_piece_that_grows_when_stripped_is_cut():
    # " wonderful" is 1 token, but the chunk is stripped and "wonderful" alone is 3; a chunk
    # is measured as it is emitted, and cut further when "" allows it.
    assert [TOK.count(s) for s in (" wonderful", "wonderful", "w", "onder", "ful")] == [1, 3, 1, 1, 1]
    assert texts(recursive_tokens(chunk_size=1, chunk_overlap=0), "a wonderful day") == [
        "a",
        "w",
        "onder",
        "ful",
        "day",
    ]
    assert texts(recursive_tokens(chunk_size=3, chunk_overlap=0), "a wonderful day") == ["a wonderful day"]
    # Without "" among the separators it is kept whole, as any oversized piece.
    splitter = RecursiveCharacterTextSplitter(
        separators=["\n\n", "\n", " "], chunk_size=1, chunk_overlap=0, length="tokens", tokenizer=TOK
    )
    assert texts(splitter, "a wonderful day") == ["a", "wonderful", "day"]


@pytest.mark.parametrize(
    ("chunk_overlap", "expected"),
    [
        (0, ["The quick brown fox jumps", " over the lazy dog."]),
        (2, ["The quick brown fox jumps", " fox jumps over the lazy", " the lazy dog."]),
        (
            4,
            [
                "The quick brown fox jumps",
                " quick brown fox jumps over",
                " brown fox jumps over the",
                " fox jumps over the lazy",
                " jumps over the lazy dog",
                " over the lazy dog.",
            ],
        ),
    ],
)
def test_token_splitter_exact(chunk_overlap, expected):
    # Windows are verbatim, not stripped; stride chunk_size - chunk_overlap tokens, as LangChain.
    assert texts(TokenTextSplitter(chunk_size=5, chunk_overlap=chunk_overlap, tokenizer=TOK), SENTENCE) == expected


@pytest.mark.parametrize(
    ("chunk_size", "chunk_overlap", "text", "expected"),
    [
        (10, 0, "aaa\n\nbbb\n\nccc\n\nddd", ["aaa\n\nbbb", "ccc\n\nddd"]),
        (10, 5, "aaa\n\nbbb\n\nccc\n\nddd", ["aaa\n\nbbb", "bbb\n\nccc", "ccc\n\nddd"]),
        # Chunks are verbatim slices: a doubled separator stays, and is measured (8 > 7).
        (10, 0, "aa\n\n\n\nbb", ["aa\n\n\n\nbb"]),
        (7, 0, "aa\n\n\n\nbb", ["aa", "bb"]),
        # One separator only: an oversized piece is kept whole.
        (3, 0, "abcdef\n\ngh", ["abcdef", "gh"]),
        (10, 0, "\n\n  \n\n", []),
    ],
)
def test_character_splitter_exact(chunk_size, chunk_overlap, text, expected):
    splitter = CharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    assert texts(splitter, text) == expected


def test_character_splitter_other_separators():
    assert texts(CharacterTextSplitter(separator=" ", chunk_size=7, chunk_overlap=0), "ab cd ef gh") == [
        "ab cd",
        "ef gh",
    ]
    assert texts(CharacterTextSplitter(separator="", chunk_size=3, chunk_overlap=1), "abcdefg") == ["abc", "cde", "efg"]
    # In tokens, pieces are measured without their separator ("jumps" is 2 tokens, "dog." 2, the
    # other words 1) and " " counts 1 between pieces (LangChain's rule), although in context it
    # joins the next word's token: the estimate is safe, not tight.
    splitter = CharacterTextSplitter(separator=" ", chunk_size=5, chunk_overlap=0, length="tokens", tokenizer=TOK)
    assert texts(splitter, SENTENCE) == ["The quick brown", "fox jumps", "over the lazy", "dog."]


EMOJI_SPLITTERS = [
    pytest.param(lambda: recursive_tokens(chunk_size=2, chunk_overlap=0), id="recursive"),
    pytest.param(lambda: recursive_tokens(chunk_size=2, chunk_overlap=1), id="recursive-overlap"),
    pytest.param(lambda: TokenTextSplitter(chunk_size=2, chunk_overlap=0, tokenizer=TOK), id="token"),
    pytest.param(lambda: TokenTextSplitter(chunk_size=2, chunk_overlap=1, tokenizer=TOK), id="token-overlap"),
    pytest.param(
        lambda: CharacterTextSplitter(separator="", chunk_size=2, chunk_overlap=0, length="tokens", tokenizer=TOK),
        id="character",
    ),
]


@pytest.mark.parametrize("make", EMOJI_SPLITTERS)
def test_code_point_longer_than_chunk_size_is_kept_whole(make):
    # Each emoji is 3 tokens > chunk_size 2: it cannot be cut, so it is a chunk of its own.
    assert TOK.count("🎉") == 3
    assert texts(make(), "🎉🎉🎉") == ["🎉", "🎉", "🎉"]


@pytest.mark.parametrize("make", EMOJI_SPLITTERS)
def test_token_spanning_code_points_is_cut_at_code_points(make):
    # '데이터' is 2 tokens and its second token starts inside '이', so cl100k_base offers no cut
    # inside the word. With chunk_size=1 it is cut at code points: '데' (2 tokens, kept whole),
    # '이' and '터' (1 each; '이터' together is 2).
    assert TOK.boundaries("데이터") == [0, 3]
    assert [TOK.count(s) for s in ("데", "이", "터", "이터")] == [2, 1, 1, 2]
    splitter = make()
    splitter = type(splitter).from_dict({**splitter.to_dict(), "chunk_size": 1, "chunk_overlap": 0}, tokenizer=TOK)
    assert texts(splitter, "데이터") == ["데", "이", "터"]


def test_literal_endoftext_is_ordinary_text():
    text = "before <|endoftext|> after"
    for splitter in (
        recursive_tokens(chunk_size=3, chunk_overlap=0),
        TokenTextSplitter(chunk_size=3, chunk_overlap=0, tokenizer=TOK),
    ):
        chunks = texts(splitter, text)
        assert "".join(chunks).replace(" ", "") == text.replace(" ", "")
        assert all(TOK.count(c) <= 3 for c in chunks)


# --------------------------------------------------------------------------------------------
# Invariants, as properties
# --------------------------------------------------------------------------------------------


def _configs(chunk_size: int, chunk_overlap: int) -> list[tuple[str, object]]:
    """(kind, splitter) for every splitter and unit; kind decides which invariants apply."""
    kw: dict[str, Any] = {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap}
    return [
        ("recursive-chars", RecursiveCharacterTextSplitter(**kw)),
        ("recursive-tokens", RecursiveCharacterTextSplitter(length="tokens", tokenizer=TOK, **kw)),
        ("recursive-bytes", RecursiveCharacterTextSplitter(length="tokens", tokenizer=Utf8ByteTokenizer(), **kw)),
        ("character-chars", CharacterTextSplitter(separator="\n", **kw)),
        ("character-any-chars", CharacterTextSplitter(separator="", **kw)),
        ("character-any-tokens", CharacterTextSplitter(separator="", length="tokens", tokenizer=TOK, **kw)),
        ("token", TokenTextSplitter(tokenizer=TOK, **kw)),
        # A tokenizer without a SliceCounter: TokenTextSplitter's other path.
        ("token-bytes", TokenTextSplitter(tokenizer=Utf8ByteTokenizer(), **kw)),
    ]


def check_invariants(kind: str, splitter, text: str, count) -> None:
    """Assert every output contract of ``splitter`` on ``text``; ``count`` is an independent cl100k count."""
    document = Document(id="doc", content=text)
    pieces = list(splitter.split(document))
    size, overlap = splitter.chunk_size, splitter.chunk_overlap
    for piece in pieces:
        # Verbatim slices with code-point offsets.
        assert piece.start_offset is not None and piece.end_offset is not None
        assert text[piece.start_offset : piece.end_offset] == piece.text
        # Never empty or whitespace-only.
        assert piece.text.strip(), piece
        # Within budget; only a single code point that needs more is kept whole.
        if kind in ("recursive-tokens", "character-any-tokens", "token"):
            n = count(piece.text)
            assert n <= size or len(piece.text) == 1, (piece.text, n, size)
        elif kind in ("recursive-bytes", "token-bytes"):
            n = len(piece.text.encode("utf-8"))
            assert n <= size or len(piece.text) == 1, (piece.text, n, size)
        elif kind in ("recursive-chars", "character-any-chars"):
            assert len(piece.text) <= size, (piece.text, size)
        if kind.startswith("recursive") or kind.startswith("character"):
            assert piece.text == piece.text.strip()
    # Token-sized recursive chunks share at most chunk_overlap tokens (the shared text, stripped).
    if kind in ("recursive-tokens", "recursive-bytes"):
        measure = count if kind == "recursive-tokens" else (lambda t: len(t.encode("utf-8")))
        for a, b in pairwise(pieces):
            if b.start_offset < a.end_offset:
                assert overlap and measure(text[b.start_offset : a.end_offset].strip()) <= overlap, (a, b)
    # In reading order; without overlap, disjoint. (With overlap, a chunk may lie inside the next
    # one: LangChain counts whitespace pieces towards a chunk, then strips them.)
    for a, b in pairwise(pieces):
        assert a.start_offset <= b.start_offset and a.end_offset <= b.end_offset, (a, b)
        assert (a.start_offset, a.end_offset) != (b.start_offset, b.end_offset), (a, b)
        if overlap == 0:
            assert a.end_offset <= b.start_offset, (a, b)
        if kind.startswith("token"):
            assert a.start_offset < b.start_offset and a.end_offset < b.end_offset, (a, b)
    # Coverage: every non-whitespace character is in some chunk.
    if kind.startswith(("recursive", "token", "character-any")):
        covered = bytearray(len(text))
        for piece in pieces:
            covered[piece.start_offset : piece.end_offset] = b"\x01" * (piece.end_offset - piece.start_offset)
        missing = [i for i, c in enumerate(text) if not c.isspace() and not covered[i]]
        assert not missing, (missing[:5], text[missing[0] : missing[0] + 20])
    # Deterministic: a fresh chunker gives the same chunks and ids.
    again = type(splitter).from_dict(splitter.to_dict(), tokenizer=getattr(splitter, "tokenizer", None))
    assert list(again.split(document)) == pieces
    chunks = splitter.chunk(document, tokenizer_identity=TOK.identity)
    assert [c.text for c in chunks] == [p.text for p in pieces]
    assert [c.chunk_id for c in chunks] == [c.chunk_id for c in again.chunk(document, tokenizer_identity=TOK.identity)]


_FRAGMENTS = [
    "\n\n",
    "\n",
    " ",
    "  ",
    "\r\n",
    "\t",
    "\n\n\n\n",
    "word",
    "Hello",
    "the",
    ".",
    ",",
    "!",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "🎉",
    "🎉🎉🎉",
    "👩\u200d👩\u200d👧\u200d👦",
    "中文字符测试",
    "데이터베이스",
    "e\u0301",
    "<|endoftext|>",
    "123456789",
    "http://example.com/a?b=c",
    "\u00a0",
    "\u3000",
]
documents = st.lists(
    st.one_of(
        st.sampled_from(_FRAGMENTS),
        st.text(st.characters(blacklist_categories=["Cs"]), max_size=6),
    ),
    max_size=40,
).map("".join)


@st.composite
def sizes(draw, max_size: int = 30):
    chunk_size = draw(st.integers(1, max_size))
    return chunk_size, draw(st.integers(0, chunk_size - 1))


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents, size=sizes())
def test_invariants_hypothesis(reference_count, text, size):
    for kind, splitter in _configs(*size):
        check_invariants(kind, splitter, text, reference_count)


def _letters(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters) for _ in range(n))


NASTY = {
    "empty": "",
    "whitespace": " \t\n\r\n\u00a0\u3000 \n\n",
    "letters-20000": _letters(20_000),
    "emoji-run": "🎉👩\u200d👩\u200d👧\u200d👦🇫🇷𒐫" * 30,
    "crlf": "First line.\r\nSecond line.\r\n\r\nNew paragraph, with words.\r\n" * 20,
    "blank-runs": "a\n\n\n\nb\n\n\n\n\n\n\n\nc\n\n\n\n" * 10,
    "endoftext": "start <|endoftext|> middle<|endoftext|><|endoftext|>end " * 10,
    "cjk-hangul": "데이터베이스 中文字符测试합니다 " * 20,
}


NASTY_CASES = [
    (name, size)
    for name in NASTY
    for size in [(2, 0), (2, 1), (7, 3), (50, 0), (200, 40)]
    if name != "letters-20000" or size[0] >= 50  # tiny sizes there: 10,000s of chunks, slow
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "size"), NASTY_CASES)
def test_invariants_nasty_inputs(reference_count, name, size):
    for kind, splitter in _configs(*size):
        check_invariants(kind, splitter, NASTY[name], reference_count)


def test_nasty_expected_shapes():
    assert texts(recursive(chunk_size=10, chunk_overlap=0), "") == []
    assert texts(TokenTextSplitter(chunk_size=10, chunk_overlap=0, tokenizer=TOK), "") == []
    assert texts(recursive(chunk_size=10, chunk_overlap=0), NASTY["whitespace"]) == []
    assert texts(TokenTextSplitter(chunk_size=10, chunk_overlap=0, tokenizer=TOK), NASTY["whitespace"]) == []
    run = NASTY["letters-20000"]
    chunks = texts(recursive(chunk_size=1000, chunk_overlap=0), run)
    assert chunks == [run[i : i + 1000] for i in range(0, 20_000, 1000)]
    # Tiny token budget on emoji: every chunk is whole code points, and any chunk over budget is
    # exactly one code point that alone needs more tokens.
    for splitter in (
        recursive_tokens(chunk_size=2, chunk_overlap=0),
        TokenTextSplitter(chunk_size=2, chunk_overlap=0, tokenizer=TOK),
    ):
        pieces = list(splitter.split(Document(id="e", content=NASTY["emoji-run"])))
        over = [p.text for p in pieces if TOK.count(p.text) > 2]
        assert over and all(len(t) == 1 for t in over)
        assert "".join(p.text for p in pieces) == NASTY["emoji-run"]


class _WholeCounts:
    """cl100k_base without ``slice_counter``: the recursive splitter then reads the token ends
    from ``token_ends`` and counts every slice by encoding it whole (``_PlainIndex``)."""

    def __init__(self, tokenizer: TiktokenTokenizer) -> None:
        self.identity, self.count = tokenizer.identity, tokenizer.count
        self.boundaries, self.token_ends = tokenizer.boundaries, tokenizer.token_ends


def _same_chunks_with_whole_counts(text: str, chunk_size: int, chunk_overlap: int) -> None:
    document = Document(id="doc", content=text)
    # The default separators, and "" alone or nearly: chunks then end where the whole encoding
    # says the budget runs out, so an edge miscounted by one token changes them.
    for separators in (None, ["\n\n", ""], [""]):
        kw: dict[str, Any] = {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "separators": separators}
        fast = RecursiveCharacterTextSplitter(length="tokens", tokenizer=TOK, **kw)
        exact = RecursiveCharacterTextSplitter(length="tokens", tokenizer=_WholeCounts(TOK), **kw)
        got = [(p.start_offset, p.end_offset) for p in fast.split(document)]
        assert got == [(p.start_offset, p.end_offset) for p in exact.split(document)], separators


_LONG_FRAGMENTS = _FRAGMENTS + [
    "It's the end. ",
    "We'll see!\n\n",
    "3.14159 ",
    "x = f(a, b)  # c\n",
    "\u2028",
    "\u2029",
    "\x0b",
    "\x0c",
    "\x85",
    "?!...",
    "---\n",
    "«quoted»",
    "合并 ",
    "Ⅻ²",
]


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(st.one_of(st.sampled_from(_LONG_FRAGMENTS), st.text("ab .,'\n\t1", max_size=30)), max_size=400).map(
        "".join
    ),
    size=st.sampled_from([(8, 0), (24, 6), (64, 0), (64, 16), (200, 50)]),
)
def test_recursive_tokens_slice_counter_counts_as_whole_encodings(text, size):
    # The SliceCounter's shortcuts (count_from: a chunk start's index and safety given once, the
    # middle a difference of token indices) decide every chunk as exact whole counts would.
    _same_chunks_with_whole_counts(text, *size)


@pytest.mark.parametrize("size", [(512, 0), (512, 64), (100, 30)])
def test_recursive_tokens_slice_counter_counts_as_whole_encodings_real(corpus, size):
    for document in corpus:
        _same_chunks_with_whole_counts(document.content, *size)
    for name in ("crlf", "cjk-hangul", "endoftext", "emoji-run"):
        _same_chunks_with_whole_counts(NASTY[name], *size)


@pytest.mark.slow
@pytest.mark.parametrize("size", [(256, 0), (128, 32)])
def test_invariants_real_documents(reference_count, corpus, size):
    for document in corpus:
        for kind, splitter in _configs(*size):
            check_invariants(kind, splitter, document.content, reference_count)


def test_langchain_characters_mode_matches(corpus):
    """Dev-only: our character-sized recursive splitter is LangChain's, chunk for chunk."""
    lc = pytest.importorskip("langchain_text_splitters")
    for chunk_size, chunk_overlap in [(200, 0), (200, 50), (50, 10), (1000, 200)]:
        ours = recursive(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        theirs = lc.RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        for document in corpus:
            assert texts(ours, document.content) == theirs.split_text(document.content), (
                document.id,
                chunk_size,
                chunk_overlap,
            )
    word = "abcdefghij"
    assert texts(recursive(chunk_size=4, chunk_overlap=2), word) == lc.RecursiveCharacterTextSplitter(
        chunk_size=4, chunk_overlap=2
    ).split_text(word)


# --------------------------------------------------------------------------------------------
# Constructor errors and configuration hashes
# --------------------------------------------------------------------------------------------

BAD_CONFIGS = [
    (RecursiveCharacterTextSplitter, {"chunk_size": 0}, "chunk_size must be > 0, got 0"),
    (RecursiveCharacterTextSplitter, {"chunk_size": -5}, "chunk_size must be > 0, got -5"),
    (RecursiveCharacterTextSplitter, {"chunk_size": 10, "chunk_overlap": -1}, "chunk_overlap must be >= 0, got -1"),
    (
        RecursiveCharacterTextSplitter,
        {"chunk_size": 10, "chunk_overlap": 10},
        "chunk_overlap must be smaller than chunk_size, got 10 >= 10",
    ),
    (
        RecursiveCharacterTextSplitter,
        {"chunk_size": 10, "chunk_overlap": 11},
        "chunk_overlap must be smaller than chunk_size, got 11 >= 10",
    ),
    (RecursiveCharacterTextSplitter, {"chunk_size": 10.0}, "chunk_size must be an integer, got 10.0"),
    (RecursiveCharacterTextSplitter, {"chunk_size": True}, "chunk_size must be an integer, got True"),
    (
        RecursiveCharacterTextSplitter,
        {"length": "bytes"},
        "length must be one of ('characters', 'tokens'), got 'bytes'",
    ),
    (RecursiveCharacterTextSplitter, {"length": "tokens"}, "length='tokens' needs a tokenizer, got None"),
    (RecursiveCharacterTextSplitter, {"separators": []}, "separators must be a non-empty list of strings, got []"),
    (
        RecursiveCharacterTextSplitter,
        {"separators": ["\n", 3]},
        "separators must be a non-empty list of strings, got ['\\n', 3]",
    ),
    (CharacterTextSplitter, {"chunk_size": 0}, "chunk_size must be > 0, got 0"),
    (CharacterTextSplitter, {"chunk_overlap": -1}, "chunk_overlap must be >= 0, got -1"),
    (
        CharacterTextSplitter,
        {"chunk_size": 5, "chunk_overlap": 5},
        "chunk_overlap must be smaller than chunk_size, got 5 >= 5",
    ),
    (CharacterTextSplitter, {"length": "bytes"}, "length must be one of ('characters', 'tokens'), got 'bytes'"),
    (CharacterTextSplitter, {"length": "tokens"}, "length='tokens' needs a tokenizer, got None"),
    (CharacterTextSplitter, {"separator": None}, "separator must be a string, got None"),
    (TokenTextSplitter, {"chunk_size": 0, "tokenizer": TOK}, "chunk_size must be > 0, got 0"),
    (TokenTextSplitter, {"chunk_overlap": -1, "tokenizer": TOK}, "chunk_overlap must be >= 0, got -1"),
    (
        TokenTextSplitter,
        {"chunk_size": 8, "chunk_overlap": 8, "tokenizer": TOK},
        "chunk_overlap must be smaller than chunk_size, got 8 >= 8",
    ),
    (TokenTextSplitter, {}, "TokenTextSplitter needs a tokenizer, got None"),
]


@pytest.mark.parametrize(("cls", "kwargs", "message"), BAD_CONFIGS)
def test_constructor_errors(cls, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        cls(**kwargs)


def test_config_hash_stable_and_sensitive():
    base = {"chunk_size": 100, "chunk_overlap": 10}
    a = RecursiveCharacterTextSplitter(**base)
    assert a.config_hash == RecursiveCharacterTextSplitter(**base).config_hash
    assert re.fullmatch(r"[0-9a-f]{64}", a.config_hash)
    variants = [
        RecursiveCharacterTextSplitter(chunk_size=101, chunk_overlap=10),
        RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=11),
        RecursiveCharacterTextSplitter(separators=["\n\n", "\n", " "], **base),
        RecursiveCharacterTextSplitter(length="tokens", tokenizer=TOK, **base),
        RecursiveCharacterTextSplitter(length="tokens", tokenizer=Utf8ByteTokenizer(), **base),
        CharacterTextSplitter(**base),
        CharacterTextSplitter(separator="\n", **base),
        CharacterTextSplitter(length="tokens", tokenizer=TOK, **base),
        TokenTextSplitter(tokenizer=TOK, **base),
        TokenTextSplitter(tokenizer=Utf8ByteTokenizer(), **base),
        TokenTextSplitter(chunk_size=100, chunk_overlap=11, tokenizer=TOK),
    ]
    hashes = [a.config_hash] + [v.config_hash for v in variants]
    assert len(set(hashes)) == len(hashes)


def test_config_names_the_tokenizer_only_for_tokens():
    chars = RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=10, tokenizer=TOK)
    assert "tokenizer" not in chars.config()
    assert chars.config_hash == RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=10).config_hash
    assert (
        chars.config_hash
        == RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=10, tokenizer=Utf8ByteTokenizer()).config_hash
    )
    tokens = RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=10, length="tokens", tokenizer=TOK)
    assert tokens.config()["tokenizer"] == "tiktoken:cl100k_base:223921b7"
    assert TokenTextSplitter(tokenizer=TOK).config()["tokenizer"] == TOK.identity
    assert (
        CharacterTextSplitter(length="tokens", tokenizer=Utf8ByteTokenizer()).config()["tokenizer"] == "utf8-bytes:v1"
    )


def test_from_dict_round_trip():
    for splitter in (
        RecursiveCharacterTextSplitter(
            chunk_size=64, chunk_overlap=8, separators=["\n", ""], length="tokens", tokenizer=TOK
        ),
        CharacterTextSplitter(chunk_size=64, chunk_overlap=8, separator="\n"),
        TokenTextSplitter(chunk_size=64, chunk_overlap=8, tokenizer=TOK),
    ):
        rebuilt = type(splitter).from_dict(splitter.to_dict(), tokenizer=TOK)
        assert rebuilt.config() == splitter.config() and rebuilt.config_hash == splitter.config_hash


@pytest.mark.slow
@pytest.mark.parametrize("name", ["letters-20000", "emoji-run", "cjk-hangul"])
@pytest.mark.parametrize("size", [(50, 0), (7, 3)])
def test_long_stretches_cut_a_section_at_a_time(reference_count, monkeypatch, name, size):
    # The "" separator takes a long stretch ATOM_SECTION_CHARS at a time (bounded memory); the
    # invariants hold across the sections' edges, and chunks still tile the text in order.
    from transforms.chunkers.text import merging

    monkeypatch.setattr(merging, "ATOM_SECTION_CHARS", 301)
    content = NASTY[name] if len(NASTY[name]) > 1000 else NASTY[name] * 4
    for kind, splitter in _configs(*size):
        check_invariants(kind, splitter, content, reference_count)
    if name == "letters-20000":  # no whitespace: without overlap the chunks tile the text exactly
        chunks = texts(recursive_tokens(chunk_size=size[0], chunk_overlap=0), content)
        assert "".join(chunks) == content and len(chunks) > 20_000 // 301


def test_chunks_are_built_field_for_field():
    # Chunker.iter_chunks and Chunk.with_token_count build chunks without the dataclass __init__;
    # they must hold every field, equal to the dataclass's own construction.
    import dataclasses

    from transforms.documents import Chunk

    document = Document(id="d", content=PARAGRAPHS, metadata={"k": 1})
    chunk = recursive_tokens(chunk_size=5, chunk_overlap=0).chunk(document, tokenizer_identity=TOK.identity)[0]
    names = {f.name for f in dataclasses.fields(Chunk)}
    assert set(vars(chunk)) == names
    assert chunk == Chunk(**vars(chunk)) and chunk.metadata == {"k": 1}
    counted = chunk.with_token_count(4)
    assert set(vars(counted)) == names and counted == dataclasses.replace(chunk, token_count=4)
    assert chunk.token_count == 0 and counted.token_count == 4
    from transforms.chunkers.base import Piece

    for splitter in (
        recursive_tokens(chunk_size=5, chunk_overlap=0),
        TokenTextSplitter(chunk_size=5, chunk_overlap=0, tokenizer=TOK),
    ):
        piece = next(iter(splitter.split(document)))
        assert set(vars(piece)) == {f.name for f in dataclasses.fields(Piece)}
        assert piece == Piece(text=piece.text, start_offset=piece.start_offset, end_offset=piece.end_offset)
