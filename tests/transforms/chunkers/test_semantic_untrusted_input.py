"""The model-backed chunkers check what models answer, and take awkward documents and settings.

None of these gets through unchecked: vectors with NaN, infinity, strings or
mixed dimensions (used as if valid, or crashing as ``chunker_error`` instead of ``model_error``),
vectors whose squares overflow a float, an empty first "sentence" sent to the embedder, a
sentence regex that makes every character a sentence, chat answers nested past the JSON parser's
recursion or repeating a key, chat answers with prose around their JSON. The job-level test runs
awkward documents (empty, whitespace, one sentence, no punctuation, a 1 MB line, CJK without
spaces) through both chunkers in-process twice and with two worker processes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.rechunk import main
from tests.conftest import read_output, write_documents
from tests.support.openai_server import bag_of_words
from transforms.chunkers import ChatBoundaryRefiner, ChunkingError, EmbeddingSemanticChunker, SemanticChunker
from transforms.chunkers.semantic import checked_vectors, parse_boundaries
from transforms.chunkers.semantic.breakpoints import cosine_distance
from transforms.documents import Document
from transforms.models import ModelError

TEXT = "Cats purr. Cats nap. Bonds yield. Rates move. Rain falls. Clouds gather."


class Scripted:
    """An Embedder answering ``answer(vectors, texts)`` where ``vectors`` are the honest ones."""

    identity = "test:scripted-embedder"

    def __init__(self, answer=None) -> None:
        self.answer = answer
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        vectors = [bag_of_words(t) for t in texts]
        return self.answer(vectors, texts) if self.answer else vectors


class Chat:
    identity = "test:chat"

    def __init__(self, *answers) -> None:
        self.answers = list(answers)

    def complete(self, messages):
        return self.answers.pop(0)


def _chunks(chunker, content: str):
    return chunker.chunk(Document(id="d", content=content, content_format="text", metadata={}), tokenizer_identity="t")


def _embedding_chunkers(embedder, **kwargs):
    yield EmbeddingSemanticChunker(embeddings=embedder, **kwargs)
    try:
        import langchain_experimental  # noqa: F401 -- only whether it is installed
    except ImportError:
        return
    from transforms.chunkers import LangchainSemanticChunker

    yield LangchainSemanticChunker(embeddings=embedder, **kwargs)


BAD_VECTORS = {
    "nan": (lambda v, t: [[math.nan] * len(x) for x in v], "NaN or infinite"),
    "inf": (lambda v, t: [[math.inf] + x[1:] for x in v], "NaN or infinite"),
    "int beyond float": (lambda v, t: [[10**400] + x[1:] for x in v], "NaN or infinite"),
    "strings": (lambda v, t: [[str(a) for a in x] for x in v], "not all numbers"),
    "bools": (lambda v, t: [[True] * len(x) for x in v], "not all numbers"),
    "empty vector": (lambda v, t: [[] for _ in v], "empty"),
    "none": (lambda v, t: None, "NoneType instead of"),
    "one short": (lambda v, t: v[:-1], "vectors for"),
    "mixed dimensions": (lambda v, t: [x[: 10 + i] for i, x in enumerate(v)], "dimensions"),
}


@pytest.mark.parametrize("case", sorted(BAD_VECTORS))
def test_invalid_vectors_are_a_model_error_never_used(case):
    answer, message = BAD_VECTORS[case]
    for chunker in _embedding_chunkers(Scripted(answer), fallback_on_transient_error=True):
        with pytest.raises(ChunkingError, match=message) as info:
            _chunks(chunker, TEXT)
        assert info.value.reason == "model_error", type(chunker).__name__


def test_dimensions_must_agree_across_batches():
    calls = []

    def answer(vectors, texts):
        calls.append(1)
        return [x[: 32 if len(calls) > 1 else 64] for x in vectors]

    for chunker in _embedding_chunkers(Scripted(answer), batch_size=2):
        calls.clear()
        with pytest.raises(ChunkingError, match=r"dimensions \[32, 64\]"):
            _chunks(chunker, TEXT)


def test_numpy_vectors_and_zero_vectors_are_accepted():
    numpy = pytest.importorskip("numpy")
    for chunker in _embedding_chunkers(Scripted(lambda v, t: numpy.array(v, dtype=numpy.float32))):
        assert "".join(c.text for c in _chunks(chunker, TEXT)).split() == TEXT.split()
    # A zero vector has similarity 0 with everything (LangChain's convention).
    assert cosine_distance([0.0, 0.0], [1.0, 0.0]) == 1.0
    assert checked_vectors([[0, 0]], 1) == [[0.0, 0.0]]


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e200, 1e-170])
def test_cosine_distance_is_right_for_vectors_whose_squares_overflow(scale):
    a, b = [3 * scale, 4 * scale], [4 * scale, 3 * scale]
    assert cosine_distance(a, b) == pytest.approx(1 - 24 / 25)
    assert cosine_distance(a, a) == pytest.approx(0.0, abs=1e-12)
    assert cosine_distance(a, [-x for x in a]) == pytest.approx(2.0)


def test_a_leading_empty_sentence_is_not_embedded_alone():
    embedder = Scripted()
    chunker = EmbeddingSemanticChunker(embeddings=embedder, buffer_size=0, sentence_split_regex=r"\n+")
    text = "\n\nCats purr\nBonds yield\nRain falls"
    assert chunker.sentences(text) == [(0, 11), (12, 23), (24, 34)]
    chunks = _chunks(chunker, text)
    assert "" not in embedder.texts and all(t.strip() for t in embedder.texts)
    assert "".join(c.text for c in chunks) == text  # the chunks still tile the document


@pytest.mark.parametrize("regex", [r"\s*", r"x*", r"|", r"(?<=\w)", r"(?=.)"])
def test_a_sentence_regex_matching_everywhere_is_refused(regex):
    with pytest.raises(ValueError, match="matches the empty string between any two characters"):
        EmbeddingSemanticChunker(embeddings=Scripted(), sentence_split_regex=regex)


def test_an_empty_match_after_cjk_full_stops_splits_text_without_spaces():
    text = "猫は静かに眠る。犬は公園を走る。株価が上がった。"
    chunker = EmbeddingSemanticChunker(embeddings=Scripted(), sentence_split_regex="(?<=[。！？])")
    assert [text[s:e] for s, e in chunker.sentences(text)] == [
        "猫は静かに眠る。",
        "犬は公園を走る。",
        "株価が上がった。",
    ]
    chunks = _chunks(
        EmbeddingSemanticChunker(
            embeddings=Scripted(), sentence_split_regex="(?<=[。！？])", buffer_size=0, number_of_chunks=3
        ),
        text,
    )
    assert [c.text for c in chunks] == ["猫は静かに眠る。", "犬は公園を走る。", "株価が上がった。"]


# -- chat answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('Sure! Here are the boundaries:\n```json\n{"boundaries": [2]}\n```\nHope this helps.', [2]),
        ('Here: {"boundaries": [1, 3]} -- blocks 1 and 3 start topics.', [1, 3]),
        ('\ufeff{"boundaries": [2]}', [2]),
        ('```\n{"boundaries": []}\n```', []),
    ],
)
def test_json_inside_prose_or_fences_is_found(answer, expected):
    assert parse_boundaries(answer, 4) == expected


@pytest.mark.parametrize(
    "answer, message",
    [
        ("[" * 50000 + "]" * 50000, "not JSON"),  # past the parser's recursion limit
        ('{"boundaries": [1], "boundaries": [3]}', "repeats a key"),
        ('{"boundaries": [1]} or maybe {"boundaries": [2]}', "2 JSON values"),
        ('```\n{"boundaries": [1]}\n```\n```\n{"boundaries": [2]}\n```', "2 JSON values"),
        ('{"boundaries": [1.0]}', "list of integers"),
        ('{"boundaries": [NaN]}', "list of integers"),
        ('{"boundaries": [1e400]}', "list of integers"),
        ('{"boundaries": [-1]}', "out of range"),
        ('{"boundaries": 2}', "list of integers"),
        ("", "not JSON"),
        ("I think the text is about cats {and money}.", "not JSON"),
    ],
)
def test_unusable_chat_answers_are_model_errors(answer, message):
    with pytest.raises(ModelError, match=message) as info:
        parse_boundaries(answer, 4)
    assert not info.value.transient


def test_a_chat_model_returning_no_text_is_a_model_error():
    with pytest.raises(ChunkingError, match="not text") as info:
        _chunks(SemanticChunker(llm=Chat(None)), "Cats purr.\n\nBonds yield.")
    assert info.value.reason == "model_error"


def test_a_deeply_nested_answer_makes_the_refiner_fall_back_not_crash():
    refiner = ChatBoundaryRefiner(llm=Chat("[" * 50000 + "]" * 50000))
    result = refiner.refine(text="Cats purr. Bonds yield.", allowed=[11])
    assert result.boundaries == () and result.fallback == "invalid_response"


def test_chat_answer_in_prose_groups_blocks_exactly():
    text = "Cats purr.\n\nCats nap.\n\nBonds yield.\n  \nRates move."
    chat = Chat('The topic changes at block 2.\n```json\n{"boundaries": [2]}\n```')
    chunks = _chunks(SemanticChunker(llm=chat), text)
    assert [c.text for c in chunks] == ["Cats purr.\n\nCats nap.", "Bonds yield.\n  \nRates move."]


# -- in the job ----------------------------------------------------------------------------------

KEY = "sk-planted-SECRET-awkward-91b2"
CATS = "Cats purr when cats feel calm. A cat sleeps while cats dream. Cats chase mice and cats nap."
MONEY = "Bonds yield interest for investors. Investors buy bonds for yield. Interest rates move bond yields."
MAX_TOKENS = 64


def _rows():
    chat = {"chunker": "chat"}
    return [
        {"id": "empty", "content": "", "metadata": None},
        {"id": "whitespace", "content": "  \n\n \t ", "metadata": None},
        {"id": "one-sentence", "content": "One sentence only.", "metadata": None},
        {"id": "no-punctuation", "content": "word " * 3000, "metadata": None},
        {"id": "one-mb-line", "content": "alpha beta gamma delta " * 45000, "metadata": None},
        {"id": "long-line-of-sentences", "content": "Alpha beta gamma. Rain falls. " * 3000, "metadata": None},
        {"id": "cjk", "content": "猫は静かに眠る。犬は公園を走る。" * 400, "metadata": None},
        {"id": "topics", "content": f"{CATS}\n\n{MONEY}\n\n{CATS}\n", "metadata": None},
        {"id": "chat-topics", "content": f"{CATS}\n\n{MONEY}\n\n{CATS}\n", "metadata": chat},
        {"id": "chat-prose", "content": f"PROSE {CATS}\n\n{MONEY}", "metadata": chat},
        {"id": "chat-fail", "content": f"FAIL503 {CATS}\n\n{MONEY}", "metadata": chat},
        {"id": "chat-echo", "content": f"ECHO {CATS}\n\n{MONEY}", "metadata": chat},
        {"id": "chat-whitespace", "content": "\n\n  \n", "metadata": chat},
    ]


@pytest.fixture(scope="module")
def awkward_runs(tmp_path_factory, _openai_server_session):
    server = _openai_server_session
    server.reset()
    server.chat_rules.update(
        {
            "FAIL503": ("status", 503),
            "ECHO": ("echo", 400),  # the error body quotes the Authorization header
            "PROSE": 'Sure!\n```json\n{"boundaries": [1]}\n```',
        }
    )
    tmp = tmp_path_factory.mktemp("awkward")
    rows = [{**r, "content_format": "text"} for r in _rows()]
    path = write_documents(tmp / "in" / "docs.parquet", rows)
    client = {"base_url": server.base_url, "api_key_env": "RECHUNK_TEST_KEY", "backoff_seconds": 0, "retries": 1}
    config = tmp / "c.json"
    config.write_text(
        json.dumps(
            {
                "max_tokens": MAX_TOKENS,
                "models": {
                    "bow": {"type": "OpenAIEmbedder", "params": {**client, "model": "bow", "batch_size": 16}},
                    "chat": {"type": "OpenAIChatModel", "params": {**client, "model": "m"}},
                },
                "chunkers": {
                    "e": {"type": "EmbeddingSemanticChunker", "params": {"embeddings": "bow"}},
                    "c": {"type": "SemanticChunker", "params": {"llm": "chat", "chunk_size": 200}},
                },
                "routes": [{"when": {"metadata": {"chunker": ["chat"]}}, "chunker": "c"}],
                "default": "e",
            }
        )
    )
    patch = pytest.MonkeyPatch()
    patch.setenv("RECHUNK_TEST_KEY", KEY)
    runs = {}
    try:
        for name, mode in [
            ("in_memory", ["--direct_running_mode=in_memory"]),
            ("in_memory_again", ["--direct_running_mode=in_memory"]),
            ("multi_processing", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]),
        ]:
            out = tmp / name
            argv = [
                "--input",
                str(path),
                "--output",
                str(out),
                "--config",
                str(config),
                "--max-dead-letter-fraction",
                "1",
            ]
            assert main([*argv, *mode]) == 0
            runs[name] = out
    finally:
        patch.undo()
        server.reset()
    return runs, {r["id"]: r for r in rows}


@pytest.mark.slow
def test_awkward_documents_are_all_accounted_for_exactly(awkward_runs, recount):
    runs, docs = awkward_runs
    out = runs["in_memory"]
    chunks, dead = read_output(out, "chunks"), read_output(out, "dead_letter")
    assert {d["document_id"]: d["reason"] for d in dead} == {
        "empty": "empty_document",
        "whitespace": "empty_document",
        "chat-whitespace": "empty_document",
        "chat-fail": "model_error",
        "chat-echo": "model_error",
    }
    assert {c["document_id"] for c in chunks} == set(docs) - {d["document_id"] for d in dead}
    for d in dead:
        assert d["payload"] == docs[d["document_id"]]["content"]  # the whole document
    assert "HTTP 503 (after 2 attempts)" in next(d["detail"] for d in dead if d["document_id"] == "chat-fail")
    for c in chunks:
        content = docs[c["document_id"]]["content"]
        assert content[c["start_offset"] : c["end_offset"]] == c["text"]
        assert recount(c["embedding_text"]) == c["token_count"] <= MAX_TOKENS
    for doc_id in {c["document_id"] for c in chunks}:
        text = "".join(c["text"] for c in sorted(chunks, key=lambda c: c["chunk_index"]) if c["document_id"] == doc_id)
        assert "".join(text.split()) == "".join(docs[doc_id]["content"].split()), doc_id
    prose = sorted((c for c in chunks if c["document_id"] == "chat-prose"), key=lambda c: c["chunk_index"])
    assert [c["text"] for c in prose] == [f"PROSE {CATS}", MONEY]


@pytest.mark.slow
def test_same_chunks_and_ids_in_every_run_and_running_mode(awkward_runs):
    runs, _ = awkward_runs

    def ids(out):
        return sorted(
            (c["document_id"], c["chunk_index"], c["chunk_id"], c["start_offset"], c["end_offset"])
            for c in read_output(out, "chunks")
        )

    assert ids(runs["in_memory"]) == ids(runs["in_memory_again"]) == ids(runs["multi_processing"])
    dead = {
        name: sorted((d["document_id"], d["reason"], d["detail"]) for d in read_output(out, "dead_letter"))
        for name, out in runs.items()
    }
    assert dead["in_memory"] == dead["in_memory_again"] == dead["multi_processing"]


@pytest.mark.slow
def test_the_key_echoed_by_the_server_appears_nowhere(awkward_runs):
    runs, _ = awkward_runs
    for out in runs.values():
        for path in Path(out).rglob("*"):
            if path.is_file():
                assert KEY not in path.read_bytes().decode("utf-8", "replace"), path
                if path.suffix == ".parquet":
                    assert KEY not in json.dumps(pq.read_table(path).to_pylist(), default=str), path


def test_many_tiny_blocks_cannot_blow_up_the_prompt():
    prompts = []

    class Recording:
        identity = "test:recording"

        def complete(self, messages):
            prompts.append(messages[-1]["content"])
            return '{"boundaries": []}'

    text = "x\n\n" * 3000
    chunks = _chunks(SemanticChunker(llm=Recording(), chunk_size=100, max_input_chars=1000), text)
    assert "".join(c.text for c in chunks).count("x") == 3000
    numbered = [p.split(":\n\n", 1)[1] for p in prompts]
    assert all(n.startswith("[0]\nx\n\n[1]\nx") for n in numbered)
    assert len(numbered) > 3 and max(len(n) for n in numbered) <= 1000
