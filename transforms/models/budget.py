"""What an embedding model reads: its budget tokenizer, input window and vector size.

Beam-free, and without torch or weights: only the model's small JSON files are read.
:class:`ModelBudget` is what ``SentenceTransformerEmbedder.budget()`` and
``OpenAIEmbedder.budget()`` return, for a job that chunks for the model it embeds with.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["OPENAI_MAX_INPUT_TOKENS", "OPENAI_TOKENIZER", "ModelBudget", "sentence_transformer_budget"]

#: The tokenizer of OpenAI's embedding models (``text-embedding-3-*``, ``text-embedding-ada-002``).
OPENAI_TOKENIZER = "tiktoken:cl100k_base"
#: Their input window, in cl100k_base tokens.
OPENAI_MAX_INPUT_TOKENS = 8191


@dataclass(frozen=True)
class ModelBudget:
    """An embedding model's input budget.

    Attributes:
        tokenizer: A ``--tokenizer`` spec (``load_tokenizer`` accepts it) whose ``count(text)`` is
            the number of tokens the model reads for ``text``, special tokens and prompt included
            (``hf-model:PATH``, ``tiktoken:cl100k_base``).
        max_tokens: The most tokens of that tokenizer the model reads; a longer text is truncated.
        dimension: The length of the model's vectors, ``None`` when not known before a call.
    """

    tokenizer: str
    max_tokens: int
    dimension: int | None


def _json(path: str) -> dict[str, Any] | list[Any] | None:
    """The JSON value of ``path``, or ``None`` when there is no such file."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read {os.path.basename(path)} of the model: {err}") from err


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def sentence_transformer_budget(path: str) -> ModelBudget:
    """The budget of the saved sentence-transformers model in the folder ``path``.

    * ``tokenizer``: ``hf-model:PATH`` -- the folder's ``tokenizer.json``, counting the special
      tokens its post-processor adds and the default prompt of ``config_sentence_transformers.json``
      (what ``SentenceTransformer.encode`` feeds the network).
    * ``max_tokens``: ``max_seq_length`` of ``sentence_bert_config.json`` (else the tokenizer's
      ``model_max_length`` from ``tokenizer_config.json``), capped by ``max_position_embeddings``
      of ``config.json`` when smaller -- as sentence-transformers caps it.
    * ``dimension``: ``out_features`` of the last ``Dense`` module of ``modules.json`` if any, else
      ``word_embedding_dimension`` of the pooling module's ``config.json``, else ``hidden_size``
      of ``config.json``; ``None`` when none is given.

    Raises:
        ValueError: No ``tokenizer.json`` in the folder, no input window in its files, or a file
            that is not JSON.
    """
    if not os.path.isfile(os.path.join(path, "tokenizer.json")):
        raise ValueError(f"the model in {path!r} has no tokenizer.json: its token budget cannot be counted")
    st_config = _json(os.path.join(path, "sentence_bert_config.json"))
    tok_config = _json(os.path.join(path, "tokenizer_config.json"))
    config = _json(os.path.join(path, "config.json"))
    window = _positive(st_config.get("max_seq_length")) if isinstance(st_config, dict) else None
    if window is None and isinstance(tok_config, dict):
        # (transformers writes a huge sentinel when a model has no limit of its own)
        window = _positive(tok_config.get("model_max_length"))
        window = window if window is not None and window < 10**9 else None
    positions = _positive(config.get("max_position_embeddings")) if isinstance(config, dict) else None
    if positions is not None:
        window = positions if window is None else min(window, positions)
    if window is None:
        raise ValueError(
            f"the model in {path!r} names no input window (sentence_bert_config.json max_seq_length, "
            "tokenizer_config.json model_max_length or config.json max_position_embeddings)"
        )
    return ModelBudget(tokenizer=f"hf-model:{path}", max_tokens=window, dimension=_dimension(path, config))


def _dimension(path: str, config: Any) -> int | None:
    """The model's vector length (see :func:`sentence_transformer_budget`)."""
    modules = _json(os.path.join(path, "modules.json"))
    pooled: int | None = None
    dense: int | None = None
    for module in modules if isinstance(modules, list) else []:
        if not isinstance(module, dict):
            continue
        kind, folder = str(module.get("type", "")), str(module.get("path", ""))
        settings = _json(os.path.join(path, folder, "config.json")) if folder else None
        if not isinstance(settings, dict):
            continue
        if kind.endswith(".Pooling"):
            pooled = _positive(settings.get("word_embedding_dimension")) or pooled
        elif kind.endswith(".Dense"):
            dense = _positive(settings.get("out_features")) or dense
    if dense is not None:
        return dense
    if pooled is not None:
        return pooled
    return _positive(config.get("hidden_size")) if isinstance(config, dict) else None
