"""Tests of transforms.tokenizers: exact counts, lossless cut offsets, offline loading, errors."""

from __future__ import annotations

import hashlib
import json
import os
import re
from itertools import pairwise

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiktoken.load import load_tiktoken_bpe
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from transforms import tokenizers as tk
from transforms.tokenizers import (
    HuggingFaceTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    TokenizerError,
    Utf8ByteTokenizer,
    cuts,
    load_tokenizer,
    segments,
    tiktoken_bpe,
    tiktoken_ranks,
)

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

SAMPLES = [
    "",
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "a<|endoftext|>b",
    "def f(x):\r\n    return x ** 2\n\n\n\n",
    "🎉🎉🎉 데이터베이스 中文字符测试 e\u0301 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "   leading and trailing   ",
]

# Surrogate-free text, weighted towards what breaks byte-level BPE offsets: emoji (4 bytes, ZWJ
# sequences), CJK and Hangul (tokens that start inside a code point), combining marks, CRLF.
_ODD = [
    "🎉",
    "👩\u200d👩\u200d👧\u200d👦",
    "🇫🇷",
    "中",
    "文",
    "字符",
    "데이터",
    "합니다",
    "e\u0301",
    "\u0301",
    "𝔘",
    "𒐫",
    "\U000e0001",
    "\r\n",
    "\n\n",
    " ",
    "\t",
    "<|endoftext|>",
    "'s",
    "123456",
]
unicode_text = st.lists(
    st.one_of(
        st.sampled_from(_ODD),
        st.text(st.characters(blacklist_categories=["Cs"]), max_size=8),
        st.text("abc xyz.,\n", max_size=12),
    ),
    max_size=25,
).map("".join)


@pytest.fixture(scope="module")
def cl100k() -> TiktokenTokenizer:
    return TiktokenTokenizer("cl100k_base")


@pytest.fixture(scope="module")
def reference_cl100k(cl100k: TiktokenTokenizer) -> tiktoken.Encoding:
    """tiktoken's own cl100k_base definition, with ranks read independently from the bundled file.

    ``tiktoken_ext.openai_public.cl100k_base`` would download its ranks; its ``load_tiktoken_bpe``
    is pointed at the installed file instead (with tiktoken's cache disabled), so nothing is
    fetched and nothing of ours is reused.
    """
    from tiktoken_ext import openai_public

    path = tiktoken_ranks.bundled_ranks_path("cl100k_base.tiktoken")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", "")  # read the file, write no cache
        ranks = load_tiktoken_bpe(path, expected_hash=CL100K_SHA256)
        mp.setattr(openai_public, "load_tiktoken_bpe", lambda url, expected_hash=None: ranks)
        definition = openai_public.cl100k_base()
    return tiktoken.Encoding(**definition)


# --------------------------------------------------------------------------------------------
# tiktoken
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tiktoken_identity(cl100k):
    assert cl100k.identity == "tiktoken:cl100k_base:223921b7"
    assert isinstance(cl100k, Tokenizer)


def test_tiktoken_definition_is_tiktokens_own(cl100k, reference_cl100k):
    ours = cl100k.encoding
    assert ours._pat_str == reference_cl100k._pat_str
    assert ours._special_tokens == reference_cl100k._special_tokens
    assert ours._mergeable_ranks == reference_cl100k._mergeable_ranks
    assert ours.n_vocab == reference_cl100k.n_vocab


@pytest.mark.parametrize("text", SAMPLES)
def test_tiktoken_count_and_tokens_match_reference(cl100k, reference_cl100k, text):
    expected = reference_cl100k.encode_ordinary(text)
    assert cl100k.encode(text) == expected
    assert cl100k.count(text) == len(expected)


def test_tiktoken_known_counts(cl100k):
    assert cl100k.count("") == 0
    assert cl100k.count("hello world") == 2
    assert cl100k.count("The quick brown fox jumps over the lazy dog.") == 10
    assert cl100k.count("🎉") == 3


def test_tiktoken_special_token_spelling_is_ordinary_text(cl100k, reference_cl100k):
    text = "before <|endoftext|> after <|fim_prefix|>"
    tokens = cl100k.encode(text)  # no "disallowed special token" error
    assert 100257 not in tokens and 100258 not in tokens
    assert cl100k.count("<|endoftext|>") == len(reference_cl100k.encode_ordinary("<|endoftext|>")) > 1


@pytest.mark.slow
def test_tiktoken_writes_no_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    TiktokenTokenizer("cl100k_base")
    assert not cache.exists()


def test_tiktoken_boundaries_examples(cl100k):
    assert cl100k.boundaries("") == [0]
    assert cl100k.boundaries("hello world") == [0, 5, 11]
    # Each emoji is 3 tokens; only the first starts at a code point.
    assert cl100k.boundaries("🎉🎉🎉") == [0, 1, 2, 3]
    # '데이터' is 2 tokens, the second starting inside '이': no cut inside the word.
    assert cl100k.boundaries("데이터") == [0, 3]


def _token_start_bytes(encoding: tiktoken.Encoding, text: str) -> set[int]:
    """Byte offsets where a token of ``text``'s ordinary encoding starts, plus the end."""
    starts, pos = {0}, 0
    for token in encoding.encode_ordinary(text):
        pos += len(encoding.decode_single_token_bytes(token))
        starts.add(pos)
    return starts


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=unicode_text)
def test_tiktoken_boundaries_are_exactly_the_token_starts_at_code_points(cl100k, reference_cl100k, text):
    cuts = cl100k.boundaries(text)
    assert cuts[0] == 0 and cuts[-1] == len(text)
    assert cuts == sorted(set(cuts))
    data = text.encode("utf-8")
    token_starts = _token_start_bytes(reference_cl100k, text)
    tokens = reference_cl100k.encode_ordinary(text)
    for b in cuts:
        prefix = text[:b].encode("utf-8")
        assert data.startswith(prefix)
        # The tokens before b decode exactly to text[:b]: b is where a token starts.
        assert len(prefix) in token_starts
        before = [t for t, end in zip(tokens, _running_ends(reference_cl100k, tokens)) if end <= len(prefix)]
        assert reference_cl100k.decode_bytes(before) == prefix
    # And no token start at a code-point boundary is missing.
    at_code_points = {len(text[:i].encode("utf-8")): i for i in range(len(text) + 1)}
    expected = sorted(at_code_points[s] for s in token_starts if s in at_code_points)
    assert cuts == (expected if text else [0])


def _running_ends(encoding: tiktoken.Encoding, tokens: list[int]) -> list[int]:
    ends, pos = [], 0
    for token in tokens:
        pos += len(encoding.decode_single_token_bytes(token))
        ends.append(pos)
    return ends


def test_tiktoken_unknown_encoding():
    with pytest.raises(TokenizerError, match=re.escape("got 'p50k_base'")):
        TiktokenTokenizer("p50k_base")
    with pytest.raises(TokenizerError, match=re.escape("'p50k_base'")):
        load_tokenizer("tiktoken:p50k_base")


def test_tiktoken_wrong_expected_hash(monkeypatch):
    wrong = "0" * 64
    monkeypatch.setitem(
        tiktoken_ranks.ENCODINGS, "cl100k_base", {**tiktoken_ranks.ENCODINGS["cl100k_base"], "sha256": wrong}
    )
    with pytest.raises(TokenizerError, match=re.escape(f"has sha256 {CL100K_SHA256}, expected {wrong}")):
        TiktokenTokenizer("cl100k_base")


def test_tiktoken_tampered_ranks_file(tmp_path, monkeypatch):
    fake = tmp_path / "cl100k_base.tiktoken"
    fake.write_bytes(b"IQ== 0\nIg== 1\n")
    monkeypatch.setattr(tiktoken_ranks, "bundled_ranks_path", lambda filename, folders=(): str(fake))
    digest = hashlib.sha256(fake.read_bytes()).hexdigest()
    with pytest.raises(TokenizerError, match=re.escape(f"{fake} has sha256 {digest}, expected {CL100K_SHA256}")):
        TiktokenTokenizer("cl100k_base")


def test_tiktoken_ranks_file_missing(monkeypatch):
    monkeypatch.setitem(
        tiktoken_ranks.ENCODINGS, "cl100k_base", {**tiktoken_ranks.ENCODINGS["cl100k_base"], "file": "nope.tiktoken"}
    )
    with pytest.raises(TokenizerError, match=re.escape("cannot find nope.tiktoken")):
        TiktokenTokenizer("cl100k_base")


# --------------------------------------------------------------------------------------------
# UTF-8 bytes
# --------------------------------------------------------------------------------------------


def test_utf8_bytes():
    tok = Utf8ByteTokenizer()
    assert tok.identity == "utf8-bytes:v1"
    assert isinstance(tok, Tokenizer)
    assert tok.count("") == 0
    assert tok.count("abc") == 3
    assert tok.count("é") == 2
    assert tok.count("🎉") == 4
    assert tok.count("a🎉é") == 7
    assert tok.boundaries("") == [0]
    assert tok.boundaries("a🎉é") == [0, 1, 2, 3]


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(text=unicode_text)
def test_utf8_bytes_properties(text):
    tok = Utf8ByteTokenizer()
    assert tok.count(text) == len(text.encode("utf-8"))
    assert tok.boundaries(text) == list(range(len(text) + 1))


# --------------------------------------------------------------------------------------------
# Hugging Face tokenizer.json
# --------------------------------------------------------------------------------------------

SENTENCES = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"]


def _word_level(sentences: list[str]) -> HFTokenizer:
    tok = HFTokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(sentences, trainers.WordLevelTrainer(special_tokens=["[UNK]"], show_progress=False))
    return tok


def _save(tok: HFTokenizer, folder) -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "tokenizer.json")
    tok.save(path)
    return path


def test_hf_file_and_folder(tmp_path):
    path = _save(_word_level(SENTENCES), tmp_path / "tiny")
    by_file = load_tokenizer("hf:" + path)
    by_folder = load_tokenizer("hf:" + str(tmp_path / "tiny"))
    assert isinstance(by_file, HuggingFaceTokenizer) and isinstance(by_file, Tokenizer)
    assert by_file.identity == by_folder.identity
    assert by_file.identity.startswith("hf:tiny:")
    for tok in (by_file, by_folder):
        assert tok.count("") == 0
        assert tok.count("the cat sat") == 3
        assert tok.count("the zebra sat") == 3  # unknown word -> [UNK], still one token
        assert tok.boundaries("") == [0]
        assert tok.boundaries("the cat sat") == [0, 4, 8, 11]
        assert tok.boundaries("  the cat  ") == [0, 2, 6, 11]


def test_hf_identity_follows_vocabulary(tmp_path):
    same_a = load_tokenizer("hf:" + _save(_word_level(SENTENCES), tmp_path / "a" / "tok"))
    same_b = load_tokenizer("hf:" + _save(_word_level(SENTENCES), tmp_path / "b" / "tok"))
    other = load_tokenizer("hf:" + _save(_word_level(SENTENCES + ["zebra"]), tmp_path / "c" / "tok"))
    assert same_a.identity == same_b.identity
    assert other.identity != same_a.identity
    assert other.identity.startswith("hf:tok:")


def test_hf_ignores_truncation_and_padding_in_the_file(tmp_path):
    tok = _word_level(SENTENCES)
    tok.enable_truncation(max_length=2)
    tok.enable_padding(length=16, pad_token="[UNK]")
    loaded = load_tokenizer("hf:" + _save(tok, tmp_path / "trunc"))
    assert loaded.count("the cat sat on the mat") == 6
    assert loaded.count("the cat") == 2
    assert loaded.boundaries("the cat sat on the mat")[-3:] == [15, 19, 22]


def _byte_level_bpe(sentences: list[str], vocab_size: int) -> HFTokenizer:
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(sentences, trainer)
    return tok


def _gpt2_byte_decoder() -> dict[str, int]:
    """The byte-level alphabet's character -> byte map (GPT-2's ``bytes_to_unicode`` inverted)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return {c: b for b, c in chars.items()}


def test_hf_byte_level_token_straddling_a_code_point_is_no_cut(tmp_path):
    # One merge: the last byte of 'é' with the first byte of '🎉'. The library reports the next
    # token's start as '🎉' (offset 1) although no token starts at byte 2.
    raw = _byte_level_bpe(["é🎉é🎉é🎉"], vocab_size=257)
    assert list(json.loads(raw.to_str())["model"]["merges"]) == [["©", "ð"]]
    tok = load_tokenizer("hf:" + _save(raw, tmp_path / "bytes"))
    assert tok.count("é🎉") == 5
    assert tok.boundaries("é🎉") == [0, 2]
    assert tok.boundaries("🎉é") == [0, 1, 2]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=unicode_text)
def test_hf_byte_level_boundaries_are_token_starts(byte_bpe, text):
    tok, raw = byte_bpe
    decode = _gpt2_byte_decoder()
    starts, pos = {0}, 0
    for piece in raw.encode(text, add_special_tokens=False).tokens:
        pos += len(piece)  # one alphabet character per byte
        assert all(c in decode for c in piece)
        starts.add(pos)
    cuts = tok.boundaries(text)
    assert cuts[0] == 0 and cuts[-1] == len(text) and cuts == sorted(set(cuts))
    for b in cuts:
        assert len(text[:b].encode("utf-8")) in starts


@pytest.fixture(scope="module")
def byte_bpe(tmp_path_factory):
    raw = _byte_level_bpe(["é🎉é🎉é🎉 데이터 中文字符 the cat sat", "🎉🎉 hello"] * 5, vocab_size=300)
    folder = tmp_path_factory.mktemp("bpe")
    return load_tokenizer("hf:" + _save(raw, folder)), raw


def test_hf_missing_file(tmp_path):
    with pytest.raises(TokenizerError, match=re.escape(f"no tokenizer.json at {str(tmp_path / 'nope')!r}")):
        load_tokenizer("hf:" + str(tmp_path / "nope"))
    with pytest.raises(TokenizerError, match=re.escape("no tokenizer.json at")):
        HuggingFaceTokenizer(str(tmp_path))  # a folder without tokenizer.json


@pytest.mark.parametrize("content", [b"not json at all", b'{"version": "1.0"}', b"\xff\xfe\x00garbage\x80"])
def test_hf_garbage_file(tmp_path, content):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(content)
    with pytest.raises(TokenizerError, match=re.escape(f"{str(path)!r} is not a Hugging Face tokenizer.json")):
        load_tokenizer("hf:" + str(path))


# --------------------------------------------------------------------------------------------
# load_tokenizer
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_load_tokenizer_specs():
    assert load_tokenizer("tiktoken:cl100k_base").identity == "tiktoken:cl100k_base:223921b7"
    assert load_tokenizer(tk.DEFAULT_TOKENIZER).identity == "tiktoken:cl100k_base:223921b7"
    assert isinstance(load_tokenizer("utf8-bytes"), Utf8ByteTokenizer)
    assert isinstance(load_tokenizer("utf8-bytes:v1"), Utf8ByteTokenizer)


@pytest.mark.parametrize("spec", ["", "nope", "tiktoken:", "hf:", "tiktoken", "utf8-bytes:v2", None])
def test_load_tokenizer_bad_specs(spec):
    with pytest.raises(TokenizerError, match=re.escape(f"got {spec!r}")):
        load_tokenizer(spec)


# --------------------------------------------------------------------------------------------
# tiktoken: long texts in segments, long runs in windows
# --------------------------------------------------------------------------------------------


def _tricky_long_texts() -> dict[str, str]:
    """Texts that cross every kind of segment cut and long-run window join."""
    import random

    rng = random.Random(4)
    prose = "\n".join(SAMPLES) + "\n# Title\n\nSome *Markdown* text, it's 12345 words.\r\nCR\rline\n\n"
    return {
        "prose": prose * 40,
        "one line of words": " ".join(
            "".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 9))) for _ in range(3000)
        ),
        "periodic letters": "abcdefghijklmnopqrstuvwxyz" * 250,
        "one letter": "a" * 6000,
        "random letters": "".join(rng.choice("abcdefghijklmnopqrstuvwxyzXYZ") for _ in range(6000)),
        "spaces then a word": " " * 5000 + "word",
        "spaces and tabs": " \t" * 3000 + "x",
        "line feeds": "a" + "\n" * 5000 + "b\n\n  \n" + "\r\n" * 2000 + "c",
        "punctuation": "".join(rng.choice("-=_*#.!'\"") for _ in range(6000)) + "'s end",
        "runs and contractions": "x" * 3000 + "'s" + "y" * 3000 + "'ll" + "-" * 2000 + " z",
        "letters into non-ASCII": "q" * 3000 + "é" + "q" * 3000 + "日本語" * 300 + "\u00a0" * 2000 + "w",
        "lone surrogates": "ab\ud800cd " * 500 + "e" * 3000 + "\udfff",
        "CJK lines": ("漢字かな交じり文。" * 40 + "\n") * 30,
        "emoji and marks": ("🎉👩\u200d👩\u200d👧 e\u0301 데이터 " * 300),
        "special spelling": "<|endoftext|> x\n<|endoftext|>" * 300,
    }


@pytest.mark.parametrize("name", list(_tricky_long_texts()))
def test_long_texts_encode_in_segments_exactly_as_whole(cl100k, reference_cl100k, monkeypatch, name):
    """count, encode and token_ends of a long text equal one whole encode_ordinary (tokenizers.SEGMENT_CHARS)."""
    import numpy as np

    text = _tricky_long_texts()[name]
    whole = reference_cl100k.encode_ordinary(tiktoken_bpe._without_surrogates(text))
    calls: list[int] = []
    original = TiktokenTokenizer._ids
    monkeypatch.setattr(TiktokenTokenizer, "_ids", lambda self, t: calls.append(len(t)) or original(self, t))
    monkeypatch.setattr(segments, "SEGMENT_CHARS", 700)  # many cuts in a short text
    assert cl100k.encode(text) == whole
    assert cl100k.count(text) == len(whole)
    ends = cl100k.token_ends(text)
    assert ends.dtype == np.int32 and ends[-1] == len(text)
    # Each token ends after the code points that start in its bytes and before it (the docstring's rule).
    starting = [sum(1 for b in reference_cl100k.decode_single_token_bytes(t) if b & 0xC0 != 0x80) for t in whole]
    assert np.array_equal(ends, np.cumsum(starting))
    assert len(calls) > 3 and max(calls) < len(text)  # it was encoded in parts


def test_long_runs_are_joined_at_the_configured_window_sizes(cl100k, reference_cl100k, monkeypatch):
    """With the shipped window and overlap, runs of each class encode exactly; no call sees a whole run."""
    calls: list[int] = []
    original = TiktokenTokenizer._ids
    monkeypatch.setattr(TiktokenTokenizer, "_ids", lambda self, t: calls.append(len(t)) or original(self, t))
    for run in ("abcdefghijklmnopqrstuvwxyz" * 300, "a" * 8000, "=" * 8000, " " * 8000 + "x", "\n" * 8000 + "x"):
        calls.clear()
        assert cl100k.encode(run) == reference_cl100k.encode_ordinary(run)
        assert max(calls) <= 2 * segments.RUN_WINDOW_CHARS


@pytest.mark.slow
def test_a_huge_run_is_never_given_to_tiktoken_whole(cl100k, monkeypatch):
    """50 MB of letters would take hours as one pre-token: each tiktoken call sees at most a window."""
    calls: list[int] = []
    original = TiktokenTokenizer._ids
    monkeypatch.setattr(TiktokenTokenizer, "_ids", lambda self, t: calls.append(len(t)) or original(self, t))
    text = "abcdefghijklmnopqrstuvwxyz" * 20_000  # 520 K letters: about 6 minutes as one call
    ends = cl100k.token_ends(text)
    assert ends[-1] == len(text) and (ends[1:] > ends[:-1]).all()
    assert max(calls) <= 2 * segments.RUN_WINDOW_CHARS


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.builds(
                lambda c, n: c * n,
                st.sampled_from(
                    [
                        "a",
                        "xy",
                        "-",
                        "=.",
                        " ",
                        "\t",
                        "\n",
                        " \t",
                        "é",
                        "1",
                        "aé",
                        "日本",
                        "😀",
                        "👨\u200d👩",
                        "\u3000",
                        " \n",
                        "\r\n",
                        "\t\n \r\n",
                        "é1",
                    ]
                ),
                st.integers(0, 1500),
            ),
            unicode_text,
            st.sampled_from(["\n", "\r\n", " ", "'s", "'ll", "\n\n", " a", "!"]),
        ),
        max_size=10,
    ).map("".join)
)
def test_segmented_encoding_property(cl100k, reference_cl100k, text):
    """Random mixes of runs and odd text: segments and windows never change a token."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(segments, "SEGMENT_CHARS", 257)
        mp.setattr(segments, "DIRECT_CHARS", 100)
        mp.setattr(segments, "LONG_RUN_CHARS", 600)
        mp.setattr(segments, "LONG_RUN", segments.long_run_pattern(600))
        mp.setattr(segments, "RUN_WINDOW_CHARS", 200)
        mp.setattr(segments, "RUN_OVERLAP_CHARS", 48)
        assert cl100k.encode(text) == reference_cl100k.encode_ordinary(text)
        assert cl100k.count(text) == len(reference_cl100k.encode_ordinary(text))


@pytest.mark.slow
def test_python_whitespace_covers_the_pattern_whitespace():
    """Safe cuts need a non-space after a line feed: Python's \\S must never be cl100k's \\s.

    The pattern's \\s is Unicode White_Space (the ``regex`` module, a tiktoken dependency, knows
    it); every such character must be ``str.isspace()``.
    """
    import sys

    import regex

    pattern_space = regex.compile(r"\s")
    missing = [hex(c) for c in range(sys.maxunicode + 1) if pattern_space.match(chr(c)) and not chr(c).isspace()]
    assert missing == []


# --------------------------------------------------------------------------------------------
# SliceCounter: exact counts of slices from one encoding of the whole text
# --------------------------------------------------------------------------------------------

_PROSE = [
    "The quick brown fox. ",
    "Jumps over\n",
    "\n\n",
    "  indented code\n",
    "x = f(a, b)  # comment\n",
    "- item one\n",
    "| a | b |\n",
    "http://example.com/path?q=1 ",
    "état ",
    "naïve ",
    "1234567 ",
    "!!!...",
    "\t",
    "\r\n",
    "'s ",
    "'ll ",
]
long_text = st.lists(
    st.one_of(st.sampled_from(_PROSE), st.sampled_from(_ODD), st.text("ab .,\n\t", max_size=20)),
    min_size=5,
    max_size=80,
).map("".join)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=long_text, data=st.data())
def test_slice_counter_counts_every_slice_exactly(cl100k, reference_cl100k, text, data):
    counter = cl100k.slice_counter(text)
    n = len(text)
    for _ in range(10):
        a = data.draw(st.integers(0, n))
        b = data.draw(st.integers(a, n))
        assert counter.count(a, b) == len(reference_cl100k.encode_ordinary(text[a:b])), (a, b)
    assert counter.count(0, n) == len(reference_cl100k.encode_ordinary(text))


@pytest.mark.slow
@pytest.mark.parametrize("edge_chars", [4096, 8])
def test_slice_counter_on_real_and_long_documents(cl100k, reference_cl100k, monkeypatch, shared_data, edge_chars):
    import random

    pq = pytest.importorskip("pyarrow.parquet")
    path = shared_data("corpus/docs_small.parquet")
    # A small EDGE_CHARS sends most slices down the path that encodes them whole.
    monkeypatch.setattr(tk.SliceCounter, "EDGE_CHARS", edge_chars)
    rows = pq.read_table(path, columns=["content"]).column("content").to_pylist()[:12]
    rng = random.Random(3)
    letters = "".join(rng.choice("abcdefghij") for _ in range(12_000))  # one long pre-token
    dense = re.sub(r"\s+", "", "".join(rows))[: 2 * segments.SEGMENT_CHARS]
    for text in rows + ["".join(rows)[: 3 * segments.SEGMENT_CHARS], letters, dense]:
        counter = cl100k.slice_counter(text)
        assert len(counter.ends) == len(reference_cl100k.encode_ordinary(text))
        for _ in range(40):
            a = rng.randrange(len(text) + 1)
            b = min(len(text), a + rng.choice([1, 63, 64, 500, 2000, 9000]))
            assert counter.count(a, b) == len(reference_cl100k.encode_ordinary(text[a:b])), (a, b)


def test_slice_counter_boundaries_and_lone_surrogates(cl100k):
    text = "ab \ud800 cd " * 40 + "데이터 " * 30
    counter = cl100k.slice_counter(text)
    assert counter.boundaries().tolist() == cl100k.boundaries(text)
    for a, b in [(0, len(text)), (3, 200), (100, len(text) - 5)]:
        assert counter.count(a, b) == cl100k.count(text[a:b])


@pytest.mark.parametrize("text", ["plain ascii words " * 50, "état naïve 데이터 " * 40, "", "x"])
def test_slice_counter_boundary_slices(cl100k, text):
    counter = cl100k.slice_counter(text)
    whole = counter.boundaries().tolist()
    assert whole == (cl100k.boundaries(text) if text else [0])
    n = len(counter.ends) + 1
    for step in (1, 7, 40):  # token ranges, walked in pieces, give the same cuts
        pieces = [counter.boundaries(lo, lo + step).tolist() for lo in range(0, n, step)]
        assert [c for piece in pieces for c in piece] == whole


_ALNUM_FRAGMENTS = [
    "word",
    "Word",
    "x",
    "123",
    "1234567",
    "v2",
    "2x",
    "'s",
    "'ll",
    "'re",
    "n't",
    "'",
    ".",
    "...",
    "!?",
    ".\n\n",
    ":\n",
    "-",
    "_",
    "(",
    ")",
    "[1]",
    "#",
    "\n",
    "\n\n",
    "\r\n",
    " ",
    "  ",
    "\t",
    "é",
    "ß",
    "데이터",
    "e\u0301",
    "²",
    "Ⅻ",
    "🎉",
    "<|endoftext|>",
    "http://a.b/c?d=1",
    "\u00a0",
]
alnum_text = st.lists(
    st.one_of(st.sampled_from(_ALNUM_FRAGMENTS), st.text("aZ09.,;'\n _-(", max_size=8)), min_size=1, max_size=60
).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=alnum_text)
def test_letter_and_digit_cuts_split_the_encoding_exactly(reference_cl100k, text):
    # Wherever the letter and digit rule allows a cut, the whole text's tokens are the tokens of
    # the text before it followed by those of the text after it (so slice counts may use it).
    whole = reference_cl100k.encode_ordinary(text)
    for p in range(1, len(text)):
        if cuts.alnum_cut(text[p - 1], text[p]):
            left = reference_cl100k.encode_ordinary(text[:p])
            assert left + reference_cl100k.encode_ordinary(text[p:]) == whole, (p, text[:p], text[p:])


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=alnum_text.map(lambda t: t * 3), data=st.data())
def test_slice_counter_exact_at_letter_digit_and_punctuation_ends(cl100k, reference_cl100k, text, data):
    # Slices that start or end at the letter and digit rule's cuts, or just after a run of
    # punctuation (the paragraph ends the recursive splitter measures), recounted whole.
    counter = cl100k.slice_counter(text)
    n = len(text)
    marks = [p for p in range(1, n) if cuts.alnum_cut(text[p - 1], text[p])]
    marks += [p for p in range(1, n) if text[p - 1] in cuts.ASCII_PUNCTUATION and text[p] in "\r\n"]
    points = sorted(set(marks)) or [0]
    for _ in range(12):
        a = data.draw(st.sampled_from(points + [0]))
        b = data.draw(st.sampled_from([p for p in points + [n] if p >= a] or [n]))
        assert counter.count(a, b) == len(reference_cl100k.encode_ordinary(text[a:b])), (a, b)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(long_text, alnum_text.map(lambda t: t * 4)), data=st.data())
def test_slice_counter_counts_of_consecutive_slices(cl100k, reference_cl100k, text, data):
    # counts(points) is count() of each consecutive slice: points at separators (as the
    # recursive splitter cuts), anywhere, repeated, and the text's ends.
    counter = cl100k.slice_counter(text)
    n = len(text)
    seps = [m.start() for m in re.finditer(r"\n\n|\n| ", text)]
    chosen = data.draw(st.lists(st.sampled_from(seps + [0, n]) | st.integers(0, n), max_size=25))
    points = sorted([0, n, *chosen])
    got = counter.counts(points)
    assert got == [len(reference_cl100k.encode_ordinary(text[a:b])) for a, b in pairwise(points)]
    assert counter.counts(points[:1]) == []


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    filler=st.text("ab .,\n\té데", min_size=0, max_size=3000),
    run=st.sampled_from(
        ["x", "Q", "aZ", ".", "-", ".-~", " ", "\t", " \t", "\n", "é", "aé", "日", "😀", "!😀", "\u00a0", " \n", "\r\n"]
    ),
    length=st.integers(segments.LONG_RUN_CHARS - 3, segments.LONG_RUN_CHARS + 600),
    at=st.integers(0, 3000),
)
def test_may_hold_long_run_never_misses_one(filler, run, length, at):
    # The quick check may say yes without a run, but never no when one is there.
    at = min(at, len(filler))
    text = filler[:at] + run * length + filler[at:]
    if segments.LONG_RUN.search(text):
        assert segments.may_hold_long_run(text)
    assert not segments.may_hold_long_run("word " * 1000 + "line\n" * 1000)


@pytest.mark.parametrize("filler", ["word ", "데이터 "])
def test_may_hold_long_run_across_its_64k_steps(filler):
    # The check reads the text 64 K code points at a time; a run across a step's edge is found.
    for run in ("x" * segments.LONG_RUN_CHARS, "\n" * segments.LONG_RUN_CHARS):
        for at in (65536 - 700, 65536 - 1, 65536, 2 * 65536 - 3):
            text = (filler * 40_000)[:at] + run + filler * 2000
            assert segments.LONG_RUN.search(text) and segments.may_hold_long_run(text), (run[0], at)
    assert not segments.may_hold_long_run(filler * 40_000)


@pytest.mark.slow
@pytest.mark.parametrize(
    "run",
    [
        "é",
        "😀",
        "👨\u200d👩\u200d👧\u200d👦",
        "日本語",
        "aé",
        "¡",
        "\u3000",
        "\u00a0",
        " \n",
        "\t\n \r\n",
        # U+001C..U+001F are whitespace to str.isspace but symbols to the pattern: one punctuation run
        "!" * 1000 + "\x1c",
        "?" * 500 + "\x1f",
    ],
)
def test_long_runs_of_any_script_are_encoded_in_windows(cl100k, reference_cl100k, monkeypatch, run):
    """A long non-ASCII letter, symbol or mixed-whitespace run is one
    pre-token, quadratic in tiktoken (200 K of ``é``: 40 s). It must go through the windows of
    ``_long_stretch`` (no tiktoken call on more than two windows of it) and give the exact tokens."""
    calls = []
    real = cl100k._ids

    def spy(text):
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(cl100k, "_ids", spy)
    text = "intro " + run * (12_000 // len(run)) + " outro\n"
    assert cl100k.encode(text) == reference_cl100k.encode_ordinary(text)
    assert max(calls) <= 2 * segments.RUN_WINDOW_CHARS + 16, max(calls)


@pytest.mark.slow
def test_run_tables_hold_every_byte_of_their_classes():
    """The quick check is a superset: every UTF-8 byte of every letter, symbol or whitespace code
    point maps to 1 in its class's table (else a run of it could be missed)."""
    import sys

    letters, symbols, spaces = segments._run_tables()
    for c in range(sys.maxunicode + 1):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        table = spaces if ch.isspace() else letters if ch.isalpha() else None if ch.isalnum() else symbols
        if table is not None:
            assert all(table[b] for b in ch.encode()), hex(c)


# Cuts at token starts inside pre-tokens (the window ends of TokenTextSplitter)

_INNER_FRAGMENTS = [
    # contractions (case-insensitive in the pattern), some of them two tokens: "'Ll" is "'L" "l"
    "tokenizer",
    "Unbelievably",
    "ama",
    "'s",
    "'S",
    "'ll",
    "'LL",
    "'Ll",
    "'lL",
    "'Ve",
    "'VE",
    "'vE",
    "'rE",
    "'re",
    "'t",
    "'",
    "o'clock",
    "n't",
    "\n  ",
    "\n\n  ",
    "\r\n   ",
    " \n  ",
    "(",
    "((",
    ")",
    "[",
    '"',
    "-",
    "--",
    "...",
    "**",
    "==",
    "_",
    "/",
    ".",
    ",",
    "$",
    "#",
    "1",
    "12",
    "123",
    "1234567",
    "2023",
    "0.5",
    "v1.2.3",
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    "\n    ",
    "\n\t",
    "é",
    "ß",
    "²",
    "데이터",
    "🎉",
    "\u00a0",
    "\x1c",
    "http://example.com/a_b?c=1",
]
inner_text = st.lists(
    st.one_of(st.sampled_from(_INNER_FRAGMENTS), st.text("aZ09.,'(_- \n", max_size=6)), min_size=1, max_size=50
).map("".join)


def _token_starts(encoding: tiktoken.Encoding, text: str) -> list[int]:
    """Code-point offsets in ``(0, len(text))`` where a token of ``text``'s encoding starts."""
    cut, offsets, data = 0, [], text.encode("utf-8")
    for token in encoding.encode_ordinary(text):
        cut += len(encoding.decode_single_token_bytes(token))
        if 0 < cut < len(data) and data[cut] & 0xC0 != 0x80:
            offsets.append(len(data[:cut].decode("utf-8")))
    return offsets


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=inner_text)
def test_token_start_cuts_split_the_encoding_exactly(reference_cl100k, text):
    # Wherever a token starts and the rule allows a cut, the whole text's tokens are the tokens
    # of the text before it followed by those of the text after it.
    whole = reference_cl100k.encode_ordinary(text)
    for p in _token_starts(reference_cl100k, text):
        if cuts.token_start_cut(text, p):
            left = reference_cl100k.encode_ordinary(text[:p])
            assert left + reference_cl100k.encode_ordinary(text[p:]) == whole, (p, text[:p], text[p:])


def test_token_start_cuts_examples(reference_cl100k):
    # The rule's cases, each at a token start of its text, and what it refuses.
    def cut(text: str, p: int) -> bool:
        assert p in _token_starts(reference_cl100k, text), (text, p)
        return cuts.token_start_cut(text, p)

    assert cut("a tokenization of words", 7)  # inside a letter run: " token" | "ization"
    assert cut("x (Unbelievably) y", 5)  # "Un" | "belie"
    assert cut("x (Unbelievably) y", 3)  # after punctuation, before a letter: " (" | "Un"
    assert cut("x =====;=====;;;;;;;;;;;===== y", 8)  # inside a punctuation run: ";" | "====="
    assert cut("n = 1234567;", 7)  # digits, grouped by three from the run's start: "123" | "456"
    assert cut("x 2023", 2)  # after a space that follows a letter, before a digit
    assert cut("x\n\n    y", 3)  # after a line feed, before the indentation of a line
    assert cut("x    y", 4)  # before the last space of a run after a letter: "   " | " y"
    assert cut("x\n    y", 5)  # the same after a line break ("\n   ": one piece, BPE splits it there)
    assert not cut("x\n\t   y", 5)  # spaces after a tab
    assert not cut("x\n    ", 2)  # indentation that runs to the text's end
    assert not cut("word'Veryunbelievable", 7)  # "'Ve" is a contraction piece: "ryun..." is not
    assert not cut("word'Veryunbelievable", 5)  # "'" | "Ve": from "Ve" on, one letter piece


def test_no_cl100k_token_ends_with_a_line_break_then_blanks(cl100k):
    # _token_start_cut relies on it: a piece of whitespace that ends with a line break and
    # spaces is encoded as the whitespace up to the line break, then the spaces.
    ranks = cl100k.encoding._mergeable_ranks
    assert [t for t in ranks if re.search(rb"[\r\n][ \t]+\Z", t)] == []


@pytest.mark.slow
def test_every_cl100k_token_is_its_own_bpe_result(cl100k):
    # _token_start_cut relies on it: tiktoken encodes a piece that is a token as that token
    # without merging, which is what merging its bytes (lowest rank first, leftmost on ties,
    # as tiktoken's byte_pair_merge does) gives too.
    ranks = cl100k.encoding._mergeable_ranks
    not_own = []
    for token, rank in ranks.items():
        parts = [token[i : i + 1] for i in range(len(token))]
        while len(parts) > 1:
            found = [(ranks.get(parts[i] + parts[i + 1]), i) for i in range(len(parts) - 1)]
            best = min(((r, i) for r, i in found if r is not None), default=None)
            if best is None:
                break
            i = best[1]
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        if parts != [token]:
            not_own.append(rank)
    assert len(ranks) == 100_256 and not_own == []


# Whitespace of every kind the pattern knows (and Python's isspace), line ends, contractions,
# digit runs, CJK, emoji and punctuation runs: where a slice's edges are hardest to count.
_HARD_EDGES = [
    " ",
    "  ",
    "   ",
    "\t",
    " \t",
    "\n",
    "\n\n",
    "\r\n",
    "\r\n\r\n",
    "\r",
    "\x0b",
    "\x0c",
    "\x85",
    "\u00a0",
    "\u2028",
    "\u2029",
    "\u3000",
    "\u2003",
    "\x1c",
    "word",
    "Word",
    "x",
    "it's",
    "we'll",
    "'re",
    "n't",
    "'",
    "1",
    "12",
    "123",
    "1234567",
    "3.14",
    "v2",
    "2x",
    "中文字符",
    "데이터",
    "합니다",
    "🎉",
    "👩\u200d👩\u200d👧\u200d👦",
    "e\u0301",
    "²",
    ".",
    "...",
    "!!!",
    "?!.",
    "---",
    "—",
    "«»",
    ".\n\n",
    ":\n",
    "(",
    ")",
    "[1]",
    "#",
    "http://a.b/c?d=1",
    "<|endoftext|>",
]
edge_text = st.lists(
    st.one_of(
        st.sampled_from(_HARD_EDGES),
        st.sampled_from(_PROSE),
        st.text(st.characters(blacklist_categories=["Cs"]), max_size=4),
    ),
    min_size=10,
    max_size=120,
).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(edge_text, long_text, alnum_text.map(lambda t: t * 4)), data=st.data())
def test_slice_counter_count_from_and_tokens_from_are_exact(cl100k, reference_cl100k, text, data):
    # count_from (a start's index and safety given once, as the recursive splitter does) is the
    # exact count of every slice from that start; its index is tokens_before of a point inside
    # the slice, from which tokens_from steps to tokens_before of any later offset.
    counter = cl100k.slice_counter(text)
    n = len(text)
    starts = [m.end() for m in re.finditer(r"\s+", text)] + [0]
    for _ in range(6):
        a = data.draw(st.sampled_from(starts) | st.integers(0, n))
        tokens_a = counter.tokens_before(a)
        for b in sorted({data.draw(st.integers(a, n)) for _ in range(4)} | {n}):
            expected = len(reference_cl100k.encode_ordinary(text[a:b]))
            for a_safe in {counter.safe_cut(a), False}:  # an unsafe start may always be said unsafe
                k, t = counter.count_from(a, tokens_a, a_safe, b)
                assert k == expected, (a, b, a_safe)
                assert tokens_a <= t <= counter.tokens_before(b), (a, b, t)
                c = data.draw(st.integers(b, n))
                assert counter.tokens_from(t, c) == counter.tokens_before(c), (t, c)


@pytest.mark.slow
def test_part_cuts_leave_the_encoding_unchanged_and_token_ends_are_max_token_chars_apart(tokenizer):
    """``part_cut`` (where the packer cuts a long line into parts) is at or after the position
    asked, and the two sides' token ends, the second moved by the cut, are the whole text's;
    consecutive token ends are at most ``max_token_chars`` apart (the packer's lower bound)."""
    import random

    import numpy as np

    from transforms.tokenizers import Utf8ByteTokenizer

    rng = random.Random(11)
    pieces = ["word", " ", "  ", "\n", "\n\n", "12345", "don't", "é", "😀", "--", "...", "\t", "x" * 40, " " * 300]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 400))) for _ in range(60)]
    texts += ["a" * 5000, " " * 3000 + "b", "-" * 2000 + " x", "1" * 999]
    for budget in (tokenizer, Utf8ByteTokenizer()):
        assert budget.max_token_chars == (128 if budget is tokenizer else 1)
        for text in texts:
            whole = np.asarray(budget.token_ends(text))
            steps = np.diff(np.concatenate([[0], whole]))
            assert len(whole) == 0 or steps.max() <= budget.max_token_chars
            for position in sorted(rng.sample(range(len(text) + 1), min(8, len(text) + 1))):
                cut = budget.part_cut(text, position)
                assert position <= cut <= len(text)
                if 0 < cut < len(text):
                    joined = np.concatenate(
                        [budget.token_ends(text[:cut]), np.asarray(budget.token_ends(text[cut:])) + cut]
                    )
                    assert joined.tolist() == whole.tolist(), (text, cut)
    assert tokenizer.part_cut("abc def", 1) == 3 and tokenizer.part_cut("abcdef", 1) == 6
    assert tokenizer.part_cut("ab\ncd", 3) == 3 and tokenizer.part_cut("ab \n cd", 1) == 2


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet=st.sampled_from(list("ab é😀\n\t  xyz.,;\u0301中文")) | st.characters(), max_size=300))
def test_token_ends_of_a_short_text_sum_each_tokens_starting_code_points(cl100k, reference_cl100k, text):
    """Short texts (summed in Python) and longer ones (numpy) follow one rule: each token ends
    after the code points that start in its bytes and before it; the array is int32."""
    import numpy as np

    whole = reference_cl100k.encode_ordinary(tiktoken_bpe._without_surrogates(text))
    starting = [sum(1 for b in reference_cl100k.decode_single_token_bytes(t) if b & 0xC0 != 0x80) for t in whole]
    ends = cl100k.token_ends(text)
    assert ends.dtype == np.int32 and np.array_equal(ends, np.cumsum(starting, dtype=np.int64))
