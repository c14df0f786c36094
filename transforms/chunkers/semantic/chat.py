"""``SemanticChunker``: a chat model groups numbered text blocks by topic; chunks stay the source's.

Beam-free. The model answers block numbers only (validated by
:func:`~transforms.chunkers.semantic.boundaries.parse_boundaries`), so it cannot rewrite text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from transforms.chunkers.base import Piece
from transforms.chunkers.semantic.boundaries import parse_boundaries
from transforms.chunkers.semantic.model_chunker import (
    ModelChunker,
    flag_option,
    int_option,
)
from transforms.chunkers.text import DEFAULT_SEPARATORS, RecursiveCharacterTextSplitter
from transforms.documents import Document
from transforms.models import ChatModel, ModelError
from transforms.tokenizers import Tokenizer

__all__ = ["SemanticChunker"]

_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")

_SYSTEM_PROMPT = (
    "You split documents into chunks for retrieval. You are given numbered text blocks in reading "
    "order. Group consecutive blocks that belong to the same topic. Answer with JSON only, of the form "
    '{"boundaries": [i, ...]}: the numbers of the blocks that start a new chunk, ascending, '
    "never 0 (block 0 always starts the first chunk). Do not repeat or change the text."
)


class SemanticChunker(ModelChunker):
    """Ask a chat model to group text blocks by topic; chunks are the source text, never the model's.

    The document is cut into blocks at blank lines (each block stripped of surrounding
    whitespace); a block longer than ``chunk_size`` characters is divided by the recursive
    separator rules into parts of at most ``chunk_size`` characters first. The blocks go to the
    model numbered, in consecutive windows of at most ``max_input_chars`` characters of numbered
    block text (the block numbers and separators count, so many tiny blocks cannot make a prompt
    larger than that); it answers which blocks start a new chunk (``{"boundaries": [...]}``, validated by
    :func:`parse_boundaries`: integers in range, ascending). A chunk is the verbatim slice from the
    start of its first block to the end of its last (whitespace inside kept); a window's first
    block always starts a chunk. Because chunks are sliced from the source by block numbers, the
    model cannot rewrite text. A chunk over ``max_tokens`` is split by the recursive rules.

    With ``fallback_on_transient_error``, a transient failure makes the whole document be grouped
    locally instead: consecutive blocks up to ``chunk_size`` characters, at the original block
    boundaries (``model_fallback`` in each chunk's metadata). Invalid answers and other failures
    dead-letter the document with ``model_error``.

    Args:
        llm: The :class:`~transforms.models.ChatModel`.
        chunk_size: Target chunk length in characters (not a hard limit; default 1000).
        max_input_chars: Numbered block text sent per model call, in characters (default 12000;
            >= ``chunk_size``).
        fallback_on_transient_error: See above (default false).
        max_tokens: Token budget of a chunk (the job's ``max_tokens``), or ``None``.
        tokenizer: The budget tokenizer (injected).

    Raises:
        ValueError: A parameter is out of range, or ``llm`` is not a ChatModel.
    """

    model_parameters = ("llm",)

    def __init__(
        self,
        *,
        llm: ChatModel,
        chunk_size: int = 1000,
        max_input_chars: int = 12000,
        fallback_on_transient_error: bool = False,
        max_tokens: int | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if not isinstance(llm, ChatModel):
            raise ValueError(f"llm must be a ChatModel (identity, complete), got {llm!r}")
        self.llm = llm
        self.chunk_size = int_option("chunk_size", chunk_size, 1)
        self.max_input_chars = int_option("max_input_chars", max_input_chars, 1)
        if self.max_input_chars < self.chunk_size:
            raise ValueError(f"max_input_chars must be >= chunk_size ({chunk_size}), got {max_input_chars}")
        self.fallback_on_transient_error = flag_option("fallback_on_transient_error", fallback_on_transient_error)
        self._init_budget(max_tokens, tokenizer)
        self._block_splitter = RecursiveCharacterTextSplitter(chunk_size=self.chunk_size, chunk_overlap=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "llm": self.llm.identity,
            "chunk_size": self.chunk_size,
            "max_input_chars": self.max_input_chars,
            "fallback_on_transient_error": self.fallback_on_transient_error,
            "max_tokens": self.max_tokens,
        }

    def blocks(self, text: str) -> list[tuple[int, int]]:
        """Stripped, non-empty block intervals, each at most ``chunk_size`` characters."""
        out: list[tuple[int, int]] = []
        pos = 0
        for start, end in [(m.start(), m.end()) for m in _BLOCK_BREAK.finditer(text)] + [(len(text), len(text))]:
            s, e = pos, start
            while s < e and text[s].isspace():
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            if s < e:
                out.extend(
                    [(s, e)]
                    if e - s <= self.chunk_size
                    else self._block_splitter._split(
                        text,
                        s,
                        e,
                        DEFAULT_SEPARATORS,
                        self._block_splitter._counter(text),
                    )
                )
            pos = end
        return out

    def windows(self, blocks: Sequence[tuple[int, int]]) -> list[list[int]]:
        """Consecutive block numbers per model call, each window's numbered text (as sent: labels
        and separators included) at most ``max_input_chars`` characters (or one block)."""
        out: list[list[int]] = []
        size = 0
        for i, (s, e) in enumerate(blocks):
            # "[n]\n" + block, with "\n\n" between blocks: tiny blocks cannot blow up the prompt.
            cost = len(f"[{len(out[-1])}]\n") + 2 + (e - s) if out else 0
            if out and size + cost <= self.max_input_chars:
                out[-1].append(i)
                size += cost
            else:
                out.append([i])
                size = len("[0]\n") + (e - s)
        return out

    def _ask(self, text: str, blocks: Sequence[tuple[int, int]], window: list[int]) -> list[int]:
        numbered = "\n\n".join(f"[{n}]\n{text[blocks[i][0] : blocks[i][1]]}" for n, i in enumerate(window))
        user = f"Target chunk size: about {self.chunk_size} characters.\nBlocks 0 to {len(window) - 1}:\n\n{numbered}"
        answer = self.llm.complete(
            [
                {"role": "system", "content": _SYSTEM_PROMPT},
                {"role": "user", "content": user},
            ]
        )
        return [window[b] for b in parse_boundaries(answer, len(window))]

    def _local_starts(self, blocks: Sequence[tuple[int, int]]) -> list[int]:
        starts, first = [0], 0
        for i in range(1, len(blocks)):
            if blocks[i][1] - blocks[first][0] > self.chunk_size:
                starts.append(i)
                first = i
        return starts

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield the model's groups of blocks as verbatim slices with offsets.

        Raises:
            ChunkingError: ``model_error`` (see the class docstring).
        """
        text = document.content
        blocks = self.blocks(text)
        if not blocks:
            return
        metadata: dict[str, Any] = {}
        try:
            starts = []
            for window in self.windows(blocks):
                starts.append(window[0])
                if len(window) > 1:
                    starts.extend(self._ask(text, blocks, window))
        except ModelError as err:
            if not (err.transient and self.fallback_on_transient_error):
                self._model_failed(err)
            starts, metadata = self._local_starts(blocks), self._fallback_metadata(err)
        ends = [s - 1 for s in starts[1:]] + [len(blocks) - 1]
        groups = [(blocks[a][0], blocks[b][1]) for a, b in zip(starts, ends)]
        yield from self._pieces(text, groups, metadata)
