"""Beam-free chunkers: plain classes you can call in a test.

``CHUNKERS`` maps the class names a configuration file may use to the classes.
"""

from transforms.chunkers.base import Chunker, ChunkingError, Piece
from transforms.chunkers.docling import DoclingChunker
from transforms.chunkers.refinement import ChatBoundaryRefiner
from transforms.chunkers.router import ChunkerRouter, Route
from transforms.chunkers.semantic import EmbeddingSemanticChunker, LangchainSemanticChunker, SemanticChunker
from transforms.chunkers.structure import HeadingChunker, StructureAwareChunker
from transforms.chunkers.text import (
    CharacterTextSplitter,
    RecursiveCharacterTextSplitter,
    TokenTextSplitter,
)

#: Class names usable as ``type`` in the configuration file.
CHUNKERS: dict[str, type[Chunker]] = {
    cls.__name__: cls
    for cls in (
        CharacterTextSplitter,
        RecursiveCharacterTextSplitter,
        TokenTextSplitter,
        DoclingChunker,
        HeadingChunker,
        StructureAwareChunker,
        EmbeddingSemanticChunker,
        LangchainSemanticChunker,
        SemanticChunker,
    )
}

__all__ = [
    "CHUNKERS",
    "CharacterTextSplitter",
    "ChatBoundaryRefiner",
    "Chunker",
    "ChunkerRouter",
    "ChunkingError",
    "DoclingChunker",
    "EmbeddingSemanticChunker",
    "HeadingChunker",
    "LangchainSemanticChunker",
    "Piece",
    "RecursiveCharacterTextSplitter",
    "Route",
    "SemanticChunker",
    "StructureAwareChunker",
    "TokenTextSplitter",
]
