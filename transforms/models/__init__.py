"""Models the semantic chunkers call: embedders and chat models, local or over HTTP.

Beam-free. Two protocols:

* :class:`Embedder` -- ``identity`` (a nonsecret string naming the model and its settings, part of
  every chunker's ``config_hash``) and batched ``embed(texts) -> list[list[float]]``.
* :class:`ChatModel` -- ``identity`` and ``complete(messages) -> str`` (one chat completion).

Implementations: :class:`~transforms.models.local.SentenceTransformerEmbedder` (a local
sentence-transformers model read from a directory, extra ``semantic``) and the OpenAI-compatible
HTTP clients :class:`~transforms.models.openai.OpenAIEmbedder` (``/v1/embeddings``) and
:class:`~transforms.models.openai.OpenAIChatModel` (``/v1/chat/completions``), on the shared
client of :mod:`transforms.models.openai_client`. Every client that holds a resource (an HTTP
session, a thread pool, a loaded model) releases it in ``close()``.

Embedders also say what they read: ``budget()`` returns a
:class:`~transforms.models.budget.ModelBudget` (a ``--tokenizer`` spec that counts what the model
reads, its input window in those tokens, its vector length), from files or settings only.

Failures are :class:`ModelError`: ``transient`` ones (connection error, timeout, HTTP 429 or 5xx,
after the retries) may fall back to local splitting; the others (HTTP 4xx, a response that is not
what was asked for) never do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["ChatModel", "Embedder", "ModelError"]


class ModelError(Exception):
    """A model call failed; ``transient`` says whether trying again later could succeed.

    The message never holds an API key or a document's text.
    """

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@runtime_checkable
class Embedder(Protocol):
    """Text in, one vector per text out, in order.

    Attributes:
        identity: Names the model, its weights or endpoint, and every setting that changes the
            vectors; never a credential. Chunkers put it in their ``config()``.
    """

    identity: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Return one embedding per text, in the order of ``texts`` (all of one dimension).

        Raises:
            ModelError: The model could not be called or answered something unusable.
        """
        ...


@runtime_checkable
class ChatModel(Protocol):
    """One chat completion per call.

    Attributes:
        identity: Names the endpoint, model and generation settings; never a credential.
    """

    identity: str

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Return the assistant's reply to ``messages`` (``{"role": ..., "content": ...}`` dicts).

        Raises:
            ModelError: The model could not be called or its answer has no text.
        """
        ...
