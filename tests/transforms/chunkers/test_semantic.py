"""The model-backed chunkers, called directly: statistics, exactness, budgets, failures, the refiner."""

from __future__ import annotations

import json
import math
import re

import pytest

from tests.support.openai_server import bag_of_words
from transforms.chunkers import (
    ChatBoundaryRefiner,
    ChunkingError,
    EmbeddingSemanticChunker,
    SemanticChunker,
    StructureAwareChunker,
)
from transforms.chunkers.semantic import breakpoint_threshold, parse_boundaries
from transforms.documents import Document
from transforms.models import ModelError
from transforms.models.openai import OpenAIChatModel, OpenAIEmbedder


class BagOfWords:
    """A local Embedder with the test server's vectors; counts its calls."""

    identity = "test:bag-of-words"

    def __init__(self, fail: ModelError | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail = fail

    def embed(self, texts):
        if self.fail is not None:
            raise self.fail
        self.batches.append(list(texts))
        return [bag_of_words(t) for t in texts]


class ScriptedChat:
    """A local ChatModel answering from a list (a ModelError in the list is raised)."""

    identity = "test:scripted-chat"

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def complete(self, messages):
        self.prompts.append(messages[-1]["content"])
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


CATS = ["Cats purr when cats feel calm.", "A cat sleeps while cats dream.", "Cats chase mice and cats nap."]
MONEY = ["Bonds yield interest for investors.", "Investors buy bonds for yield.", "Interest rates move bond yields."]
# Sentences separated by varied whitespace, which chunks must keep.
TEXT = "  " + " ".join(CATS[:2]) + "\n" + CATS[2] + "\n\n" + "  ".join(MONEY) + "\n"


def _doc(content: str, fmt: str = "text") -> Document:
    return Document(id="d1", content=content, content_format=fmt, metadata={})


def _chunks(chunker, content: str, fmt: str = "text"):
    return chunker.chunk(_doc(content, fmt), tokenizer_identity="t")


# -- statistics -------------------------------------------------------------------------------


def test_threshold_modes_match_hand_computed_values():
    d = [0.1, 0.5, 0.2, 0.9]
    # numpy's linear percentile of the sorted [0.1, 0.2, 0.5, 0.9]: rank 0.95 * 3 = 2.85.
    assert breakpoint_threshold(d, "percentile", 95)[0] == pytest.approx(0.5 + 0.85 * 0.4)
    mean = 0.425
    std = math.sqrt(((0.1 - mean) ** 2 + (0.5 - mean) ** 2 + (0.2 - mean) ** 2 + (0.9 - mean) ** 2) / 4)
    assert breakpoint_threshold(d, "standard_deviation", 3)[0] == pytest.approx(mean + 3 * std)
    q1, q3 = 0.1 + 0.75 * 0.1, 0.5 + 0.25 * 0.4  # ranks 0.75 and 2.25
    assert breakpoint_threshold(d, "interquartile", 1.5)[0] == pytest.approx(mean + 1.5 * (q3 - q1))
    threshold, gradient = breakpoint_threshold(d, "gradient", 95)
    assert gradient == pytest.approx([0.4, 0.05, 0.2, 0.7])  # one-sided at the ends, central inside
    assert threshold == pytest.approx(0.4 + 0.85 * 0.3)


def test_breakpoints_per_mode_and_exact_number_of_chunks():
    chunker = EmbeddingSemanticChunker(embeddings=BagOfWords(), breakpoint_threshold_amount=50)
    d = [0.1, 0.5, 0.2, 0.9]
    assert chunker.breakpoints(d) == [1, 3]  # above the median 0.35
    assert EmbeddingSemanticChunker(embeddings=BagOfWords(), breakpoint_threshold_type="gradient").breakpoints(d) == [3]
    # number_of_chunks: the strongest cuts exactly; earlier offsets win ties.
    counted = EmbeddingSemanticChunker(embeddings=BagOfWords(), number_of_chunks=3)
    assert counted.breakpoints(d) == [1, 3]
    assert counted.breakpoints([0.5, 0.2, 0.5, 0.5]) == [0, 2]


# -- EmbeddingSemanticChunker --------------------------------------------------------------------


def test_cuts_at_the_topic_change_and_keeps_every_character():
    embedder = BagOfWords()
    chunker = EmbeddingSemanticChunker(embeddings=embedder, number_of_chunks=2, buffer_size=0, batch_size=4)
    chunks = _chunks(chunker, TEXT)
    assert "".join(c.text for c in chunks) == TEXT  # verbatim, all whitespace kept
    assert chunks[0].text.strip().split("\n")[-1] == CATS[2]
    assert chunks[1].text.startswith(MONEY[0])
    for c in chunks:
        assert TEXT[c.start_offset : c.end_offset] == c.text
    # Six sentences (the final line break joins the last one), batch_size 4.
    assert [len(b) for b in embedder.batches] == [4, 2]


def test_distances_are_langchains_for_the_same_embedder():
    pytest.importorskip("langchain_experimental")
    from langchain_experimental.text_splitter import SemanticChunker as LC

    from transforms.chunkers.semantic.langchain_adapter import LangchainEmbeddings

    text = " ".join(CATS + MONEY + CATS)
    for kind in ("percentile", "standard_deviation", "interquartile", "gradient"):
        for amount in (None, 10, 60):
            if kind in ("standard_deviation", "interquartile") and amount is not None:
                amount = amount / 100
            ours = EmbeddingSemanticChunker(
                embeddings=BagOfWords(), breakpoint_threshold_type=kind, breakpoint_threshold_amount=amount
            )
            theirs = LC(
                LangchainEmbeddings(BagOfWords(), 64),
                breakpoint_threshold_type=kind,
                breakpoint_threshold_amount=amount,
            )
            assert [c.text.strip() for c in _chunks(ours, text)] == theirs.split_text(text), (kind, amount)


def test_min_chunk_size_in_characters_runs_a_short_group_on():
    text = "Cats purr. Bonds yield. Cats nap and cats purr loudly."
    split = EmbeddingSemanticChunker(embeddings=BagOfWords(), number_of_chunks=3, buffer_size=0)
    assert [c.text for c in _chunks(split, text)] == ["Cats purr. ", "Bonds yield. ", "Cats nap and cats purr loudly."]
    merged = EmbeddingSemanticChunker(embeddings=BagOfWords(), number_of_chunks=3, buffer_size=0, min_chunk_size=11)
    # "Cats purr." is 10 characters: it runs on to the next cut.
    assert [c.text for c in _chunks(merged, text)] == ["Cats purr. Bonds yield. ", "Cats nap and cats purr loudly."]


def test_an_over_long_group_is_split_by_the_recursive_rules(tokenizer, recount):
    text = " ".join(CATS * 30) + "\n\n" + " ".join(MONEY * 30)
    chunker = EmbeddingSemanticChunker(embeddings=BagOfWords(), number_of_chunks=2, max_tokens=40, tokenizer=tokenizer)
    chunks = _chunks(chunker, text)
    assert len(chunks) > 2
    for c in chunks:
        assert recount(c.text) <= 40
        assert text[c.start_offset : c.end_offset] == c.text
    assert re.sub(r"\s", "", "".join(c.text for c in chunks)) == re.sub(r"\s", "", text)
    assert [c.start_offset for c in chunks] == sorted(c.start_offset for c in chunks)


def test_model_failures_dead_letter_or_fall_back():
    transient = ModelError("embeddings endpoint 127.0.0.1/v1/embeddings: HTTP 503", transient=True)
    with pytest.raises(ChunkingError) as info:
        _chunks(EmbeddingSemanticChunker(embeddings=BagOfWords(fail=transient)), TEXT)
    assert info.value.reason == "model_error" and "HTTP 503" in info.value.detail
    fallback = EmbeddingSemanticChunker(embeddings=BagOfWords(fail=transient), fallback_on_transient_error=True)
    chunks = _chunks(fallback, TEXT)
    assert chunks and all(c.metadata["model_fallback"] == "transient_model_error" for c in chunks)
    permanent = ModelError("malformed", transient=False)
    with pytest.raises(ChunkingError, match="malformed"):
        _chunks(EmbeddingSemanticChunker(embeddings=BagOfWords(fail=permanent), fallback_on_transient_error=True), TEXT)


def test_config_names_the_models_identity_and_checks_values():
    chunker = EmbeddingSemanticChunker(embeddings=BagOfWords())
    assert chunker.config()["embeddings"] == "test:bag-of-words"
    assert chunker.config()["breakpoint_threshold_amount"] == 95
    with pytest.raises(ValueError, match=r"breakpoint_threshold_type must be one of .* got 'median'"):
        EmbeddingSemanticChunker(embeddings=BagOfWords(), breakpoint_threshold_type="median")
    with pytest.raises(ValueError, match="embeddings must be an Embedder"):
        EmbeddingSemanticChunker(embeddings=ScriptedChat())
    with pytest.raises(ValueError, match="sentence_split_regex"):
        EmbeddingSemanticChunker(embeddings=BagOfWords(), sentence_split_regex="(")


def test_through_the_http_embedder(openai_server):
    embedder = OpenAIEmbedder(base_url=openai_server.base_url, model="bow", backoff_seconds=0)
    chunker = EmbeddingSemanticChunker(embeddings=embedder, number_of_chunks=2, buffer_size=0)
    local = EmbeddingSemanticChunker(embeddings=BagOfWords(), number_of_chunks=2, buffer_size=0)
    assert [c.text for c in _chunks(chunker, TEXT)] == [c.text for c in _chunks(local, TEXT)]
    assert embedder.calls == 1


# -- LangchainSemanticChunker ------------------------------------------------------------------


def test_langchain_wrapper_is_langchains_output_with_offsets_where_verbatim(tokenizer):
    pytest.importorskip("langchain_experimental")
    from langchain_experimental.text_splitter import SemanticChunker as LC

    from transforms.chunkers import LangchainSemanticChunker
    from transforms.chunkers.semantic.langchain_adapter import LangchainEmbeddings

    text = " ".join(CATS[:2]) + "\n" + " ".join([CATS[2]] + MONEY + CATS)
    chunker = LangchainSemanticChunker(embeddings=BagOfWords(), breakpoint_threshold_amount=60, buffer_size=0)
    expected = LC(LangchainEmbeddings(BagOfWords(), 64), breakpoint_threshold_amount=60, buffer_size=0).split_text(text)
    chunks = _chunks(chunker, text)
    assert [c.text for c in chunks] == expected and len(chunks) == 4
    found = 0
    for c in chunks:
        if c.start_offset is None:
            assert c.end_offset is None and c.text == " ".join(CATS)  # rejoined with a space: no slice
        else:
            found += 1
            assert text[c.start_offset : c.end_offset] == c.text
    assert 0 < found < len(chunks)
    assert chunker.config()["embeddings"] == "test:bag-of-words"


# -- SemanticChunker (chat) ----------------------------------------------------------------------

BLOCKS = ["Cats purr.", "Cats nap.", "Bonds yield.", "Rates move."]
BLOCK_TEXT = "\n\n".join(BLOCKS[:2]) + "\n\n\n" + "\n  \n".join(BLOCKS[2:]) + "\n"


def test_chat_groups_blocks_into_verbatim_slices():
    chat = ScriptedChat('{"boundaries": [2]}')
    chunks = _chunks(SemanticChunker(llm=chat), BLOCK_TEXT)
    assert [c.text for c in chunks] == ["Cats purr.\n\nCats nap.", "Bonds yield.\n  \nRates move."]
    for c in chunks:
        assert BLOCK_TEXT[c.start_offset : c.end_offset] == c.text
    assert "[3]\nRates move." in chat.prompts[0]


def test_chat_windows_bound_the_input_and_long_blocks_are_divided():
    chat = ScriptedChat('{"boundaries": [1]}', '```json\n{"boundaries": []}\n```')
    chunker = SemanticChunker(llm=chat, chunk_size=12, max_input_chars=33)
    assert chunker.blocks("Cats purr and nap.\n\nBonds.") == [(0, 9), (10, 18), (20, 26)]
    chunks = _chunks(chunker, BLOCK_TEXT)
    # Windows of <= 33 characters as sent ("[0]\nCats purr.\n\n[1]\nCats nap." is 29, with
    # "\n\n[2]\nBonds yield." 47): [0, 1] and [2, 3]; the second window starts a chunk.
    assert len(chat.prompts) == 2 and all(len(p) < 200 for p in chat.prompts)
    assert [c.text for c in chunks] == ["Cats purr.", "Cats nap.", "Bonds yield.\n  \nRates move."]


@pytest.mark.parametrize(
    "answer, message",
    [
        ("not json", "not JSON"),
        ('{"boundaries": [4]}', "out of range"),
        ('{"boundaries": [0, 2]}', "out of range"),
        ('{"boundaries": [2, 1]}', "not ascending"),
        ('{"boundaries": [1, 1]}', "not ascending"),
        ('{"boundaries": ["2"]}', "list of integers"),
        ('{"chunks": ["Cats purr. Cats nap.", "Bonds yield. Rates move."]}', "list of integers"),
    ],
)
def test_invalid_chat_answers_are_never_trusted(answer, message):
    chunker = SemanticChunker(llm=ScriptedChat(answer), fallback_on_transient_error=True)
    with pytest.raises(ChunkingError, match=message) as info:
        _chunks(chunker, BLOCK_TEXT)
    assert info.value.reason == "model_error"


def test_transient_chat_failure_falls_back_to_block_grouping_when_configured():
    error = ModelError("chat endpoint: no answer within 1 s (after 3 attempts)", transient=True)
    with pytest.raises(ChunkingError):
        _chunks(SemanticChunker(llm=ScriptedChat(error)), BLOCK_TEXT)
    chunks = _chunks(
        SemanticChunker(llm=ScriptedChat(error), chunk_size=30, fallback_on_transient_error=True), BLOCK_TEXT
    )
    assert [c.text for c in chunks] == ["Cats purr.\n\nCats nap.", "Bonds yield.\n  \nRates move."]
    assert all(c.metadata["model_fallback"] == "transient_model_error" for c in chunks)


@pytest.mark.slow
def test_chat_over_http_failures(openai_server):
    def chunker(**kwargs):
        llm = OpenAIChatModel(base_url=openai_server.base_url, model="m", backoff_seconds=0, **{"retries": 0, **kwargs})
        return SemanticChunker(llm=llm, fallback_on_transient_error=True)

    openai_server.chat_answers.append(json.dumps({"boundaries": [2]}))
    assert len(_chunks(chunker(), BLOCK_TEXT)) == 2
    for fault in (("status", 500), ("status", 429), ("drop",), ("sleep", 1.0, "{}")):
        openai_server.chat_answers[:] = [fault]
        chunks = _chunks(chunker(timeout_seconds=0.3), BLOCK_TEXT)
        assert chunks[0].metadata["model_fallback"] == "transient_model_error", fault
    openai_server.chat_answers[:] = [("status", 400)]
    with pytest.raises(ChunkingError, match="HTTP 400"):
        _chunks(chunker(), BLOCK_TEXT)
    openai_server.chat_answers[:] = [("raw", "<html>")]
    with pytest.raises(ChunkingError, match="not JSON"):
        _chunks(chunker(), BLOCK_TEXT)


def test_parse_boundaries_accepts_only_the_asked_shape():
    assert parse_boundaries('{"boundaries": [1, 3]}', 4) == [1, 3]
    assert parse_boundaries('```\n{"boundaries": []}\n```', 1) == []
    with pytest.raises(ModelError):
        parse_boundaries('{"boundaries": [true]}', 4)


# -- ChatBoundaryRefiner in StructureAwareChunker -----------------------------------------------

SECTION = (
    "# Pets and money\n\n"
    + "\n\n".join(
        [
            "Cats purr all day long. " * 6,
            "Cats nap in the sun. " * 6,
            "Bonds yield interest. " * 6,
            "Rates move bonds. " * 6,
        ]
    )
    + "\n"
)


def _structure(tokenizer, refiner=None):
    kwargs = {"semantic_mode": "refiner", "semantic_refiner": refiner} if refiner else {}
    # Greedy cuts: the cuts the refiner is asked about are those of a target of 60 tokens.
    return StructureAwareChunker(
        tokenizer=tokenizer, target_tokens=60, max_tokens=100, min_preferred_tokens=0, cuts="greedy", **kwargs
    )


def test_refiner_moves_a_cut_to_the_topic_change(tokenizer, recount):
    heuristic = _chunks(_structure(tokenizer), SECTION, "markdown")
    cuts = [c.start_offset for c in heuristic]
    assert len(heuristic) == 3 and SECTION.index("Rates") not in cuts
    # Between chunk 1 ("Cats nap..." + "Bonds...") and chunk 2 ("Rates..."), parts are
    # [0] "Cats nap", [1] "Bonds", [2] "Rates": the model says the topic changes at part 1.
    chat = ScriptedChat('{"boundaries": [1]}')
    refined = _chunks(_structure(tokenizer, ChatBoundaryRefiner(llm=chat)), SECTION, "markdown")
    assert [c.start_offset for c in refined][2] == SECTION.index("Bonds")
    assert len(chat.prompts) >= 1
    for c in refined:
        assert SECTION[c.start_offset : c.end_offset] == c.text
        assert recount(c.embedding_text) <= 100
    assert "".join(c.text for c in refined) == SECTION[refined[0].start_offset :]


@pytest.mark.parametrize("answer", ['{"boundaries": [9]}', "nonsense", ModelError("HTTP 503", transient=True)])
def test_refiner_failure_keeps_the_packers_cut_and_says_so(tokenizer, answer):
    heuristic = _chunks(_structure(tokenizer), SECTION, "markdown")
    chat = ScriptedChat(*[answer] * 5)
    refined = _chunks(_structure(tokenizer, ChatBoundaryRefiner(llm=chat)), SECTION, "markdown")
    assert [c.text for c in refined] == [c.text for c in heuristic]
    assert {c.metadata.get("model_fallback") for c in refined} & {"invalid_response", "model_error"}


def test_refiner_config_and_checks(tokenizer):
    refiner = ChatBoundaryRefiner(llm=ScriptedChat())
    plain = _structure(tokenizer)
    assert "semantic_refiner" not in plain.config()
    assert _structure(tokenizer, refiner).config()["semantic_refiner"]["identity"] == "test:scripted-chat"
    with pytest.raises(ValueError, match="needs a ChatBoundaryRefiner"):
        StructureAwareChunker(tokenizer=tokenizer, semantic_mode="refiner")
    with pytest.raises(ValueError, match="only used with semantic_mode 'refiner'"):
        StructureAwareChunker(tokenizer=tokenizer, semantic_refiner=refiner)


def test_langchain_wrapper_failures(tokenizer, recount):
    pytest.importorskip("langchain_experimental")
    from transforms.chunkers import LangchainSemanticChunker

    transient = ModelError("HTTP 502", transient=True)
    with pytest.raises(ChunkingError) as info:
        _chunks(LangchainSemanticChunker(embeddings=BagOfWords(fail=transient)), TEXT)
    assert info.value.reason == "model_error"
    text = " ".join(CATS * 20)
    chunker = LangchainSemanticChunker(
        embeddings=BagOfWords(fail=transient), fallback_on_transient_error=True, max_tokens=30, tokenizer=tokenizer
    )
    chunks = _chunks(chunker, text)
    assert len(chunks) > 1
    for c in chunks:
        assert c.metadata["model_fallback"] == "transient_model_error"
        assert text[c.start_offset : c.end_offset] == c.text and recount(c.text) <= 30
