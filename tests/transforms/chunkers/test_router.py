"""ChunkerRouter: first matching route wins; metadata values match by type and value."""

import pytest

from transforms.chunkers.base import ChunkingError
from transforms.chunkers.router import ChunkerRouter, Route
from transforms.chunkers.text import CharacterTextSplitter, RecursiveCharacterTextSplitter
from transforms.documents import Document

A, B = CharacterTextSplitter(), RecursiveCharacterTextSplitter()


def _doc(fmt="text", **metadata):
    return Document(id="d", content="x", content_format=fmt, metadata=metadata)


def test_first_match_wins_then_default():
    router = ChunkerRouter(
        chunkers={"a": A, "b": B},
        routes=[
            Route(chunker="a", content_formats=frozenset({"markdown"})),
            Route(chunker="b", metadata={"lang": frozenset({"en"})}),
        ],
        default="a",
    )
    assert router.select(_doc("markdown", lang="en"))[0] == "a"
    assert router.select(_doc("text", lang="en"))[0] == "b"
    assert router.select(_doc("text", lang="de"))[0] == "a"


@pytest.mark.parametrize(
    "value, matches", [(1, True), (True, False), (1.0, False), ("1", False), ([1], False), (None, False)]
)
def test_metadata_values_match_by_type_and_value(value, matches):
    router = ChunkerRouter(chunkers={"a": A}, routes=[Route(chunker="a", metadata={"priority": frozenset({1})})])
    doc = _doc(priority=value)
    if matches:
        assert router.select(doc)[0] == "a"
    else:
        with pytest.raises(ChunkingError) as err:
            router.select(doc)
        assert err.value.reason == "no_route"


def test_routes_and_default_must_name_known_chunkers():
    with pytest.raises(ValueError, match="route names chunker 'x'"):
        ChunkerRouter(chunkers={"a": A}, routes=[Route(chunker="x")])
    with pytest.raises(ValueError, match="default names chunker 'x'"):
        ChunkerRouter(chunkers={"a": A}, default="x")


def test_close_closes_every_chunker_and_every_model_once_each():
    from transforms.chunkers.refinement import ChatBoundaryRefiner
    from transforms.chunkers.semantic import EmbeddingSemanticChunker, SemanticChunker
    from transforms.chunkers.structure import StructureAwareChunker
    from transforms.tokenizers import Utf8ByteTokenizer

    closed = []

    class Model:
        def __init__(self, name):
            self.identity = name

        def embed(self, texts):
            return [[1.0] for _ in texts]

        def complete(self, messages):
            return '{"boundaries": []}'

        def close(self):
            closed.append(self.identity)

    embedder, chat, unused = Model("embedder"), Model("chat"), Model("unused")
    chunkers = {
        "embedding": EmbeddingSemanticChunker(embeddings=embedder),
        "chat": SemanticChunker(llm=chat),
        "structure": StructureAwareChunker(
            tokenizer=Utf8ByteTokenizer(),
            max_tokens=64,
            semantic_mode="refiner",
            semantic_refiner=ChatBoundaryRefiner(llm=chat),
        ),
        "plain": A,
    }
    router = ChunkerRouter(
        chunkers=chunkers, default="plain", models={"e": embedder, "c": chat, "u": unused, "none": object()}
    )
    router.close()
    # Each chunker closes the models it names, then the router closes every model it owns.
    assert sorted(closed) == sorted(["embedder", "chat", "chat", "embedder", "chat", "unused"])
    closed.clear()
    A.close()  # a chunker without models: nothing to release
    assert closed == []
    assert [c.text for c in router.select(_doc())[1].chunk(_doc(), tokenizer_identity="t")] == ["x"]
