"""Opt-in chat boundary selection among cuts that are already valid; source text is never rewritten.

Beam-free. :class:`ChatBoundaryRefiner` (reference API name) asks a
:class:`~transforms.models.ChatModel` which of a list of allowed cut offsets of a text starts a new
topic, and validates the answer: only offsets from the allowed list, in range, ascending. Every
ordinary failure (a transient or permanent model error, an invalid answer, a text over
``max_input_chars``) gives no boundaries and a ``fallback`` reason, so the caller keeps its own
deterministic cut: a refiner can only choose, never break anything.

``StructureAwareChunker(semantic_mode="refiner", semantic_refiner=...)`` uses it to move the cut
between two consecutive chunks of the same section to the block start the model picks, when
both chunks still fit the budget (see ``transforms.chunkers.structure``).

The timeout, retries, backoff, concurrency, response cache and ``allow_external_transmission``
of the reference's signature are the chat client's settings in this project
(:class:`~transforms.models.openai.OpenAIChatModel`), so they are set once per model.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from transforms.chunkers.semantic.boundaries import parse_boundaries
from transforms.models import ChatModel, ModelError

__all__ = ["ChatBoundaryRefiner", "RefinementResult"]

_SYSTEM_PROMPT = (
    "You choose where a document chunk should end. You are given a text cut into numbered parts. "
    "Pick the part that starts a new topic, if any. Answer with JSON only, of the form "
    '{"boundaries": [i]} with the number of that part (never 0), or {"boundaries": []} when the '
    "text is one topic. Do not repeat or change the text."
)


@dataclass(frozen=True)
class RefinementResult:
    """Validated boundaries (offsets into the text, ascending) and what happened.

    Attributes:
        boundaries: Chosen offsets, each one of the allowed ones; empty on fallback.
        calls: Model calls made for this request (0 or 1).
        fallback: ``None``, or why the caller's own cut stands (``model_error``,
            ``invalid_response``, ``input_too_long``).
    """

    boundaries: tuple[int, ...] = ()
    calls: int = 0
    fallback: str | None = None


class ChatBoundaryRefiner:
    """Let a chat model choose among allowed cut offsets; never trusted beyond validation.

    Args:
        llm: The :class:`~transforms.models.ChatModel`.
        identity: Nonsecret identity of the strategy for ``config()``; default the model's.
        max_input_chars: Longest text sent in one request (default 12000); longer texts fall back
            without a call.

    Raises:
        ValueError: ``llm`` is not a ChatModel, or ``max_input_chars`` is not a positive integer.
    """

    def __init__(self, *, llm: ChatModel, identity: str | None = None, max_input_chars: int = 12000) -> None:
        if not isinstance(llm, ChatModel):
            raise ValueError(f"llm must be a ChatModel (identity, complete), got {llm!r}")
        if not isinstance(max_input_chars, int) or isinstance(max_input_chars, bool) or max_input_chars <= 0:
            raise ValueError(f"max_input_chars must be an integer > 0, got {max_input_chars!r}")
        if identity is not None and not isinstance(identity, str):
            raise ValueError(f"identity must be a string, got {identity!r}")
        self.llm = llm
        self.identity = llm.identity if identity is None else identity
        self.max_input_chars = max_input_chars

    def close(self) -> None:
        """Release what the chat model holds (its ``close()``, when it has one). Idempotent."""
        close = getattr(self.llm, "close", None)
        if callable(close):
            close()

    def config(self) -> dict[str, Any]:
        """Nonsecret settings that decide the refiner's choices (part of the chunker's config_hash)."""
        return {"type": type(self).__name__, "identity": self.identity, "max_input_chars": self.max_input_chars}

    def refine(self, *, text: str, allowed: Sequence[int]) -> RefinementResult:
        """Ask which of ``allowed`` (offsets strictly inside ``text``, ascending) starts a new topic.

        Returns:
            The validated choice, or no boundaries with a ``fallback`` reason.
        """
        allowed = [a for a in allowed if 0 < a < len(text)]
        if not allowed:
            return RefinementResult()
        if len(text) > self.max_input_chars:
            return RefinementResult(fallback="input_too_long")
        edges = [0, *allowed, len(text)]
        parts = "\n".join(f"[{i}] {text[a:b]!r}" for i, (a, b) in enumerate(itertools.pairwise(edges)))
        try:
            answer = self.llm.complete(
                [{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": parts}]
            )
        except ModelError:
            return RefinementResult(calls=1, fallback="model_error")
        try:
            chosen = parse_boundaries(answer, len(edges) - 1)
        except ModelError:
            return RefinementResult(calls=1, fallback="invalid_response")
        return RefinementResult(boundaries=tuple(edges[i] for i in chosen), calls=1)
