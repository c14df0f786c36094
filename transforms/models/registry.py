"""Build the named models of a configuration's ``models:`` section.

Beam-free. Spec shape (what ``pipelines.config`` makes of the file, already checked)::

    {NAME: {"type": CLASS_NAME, "params": {...}}}

``CLASS_NAME`` is one of :data:`MODELS`. Chunker parameters that take a model (``embeddings``,
``llm``, ``semantic_refiner.llm``) name one of these; :func:`build_models` is called where the
chunkers are built (``DoFn.setup()`` on workers, and once on the driver to check the options), so
each worker holds one instance per name, shared by the chunkers that name it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MODELS", "build_models", "model_class"]

#: Class names usable as ``type`` under ``models:``, with their module (imported on use).
MODELS: dict[str, str] = {
    "SentenceTransformerEmbedder": "transforms.models.local",
    "OpenAIEmbedder": "transforms.models.openai",
    "OpenAIChatModel": "transforms.models.openai",
}


def model_class(name: str) -> type:
    """The model class called ``name`` (a key of :data:`MODELS`).

    Raises:
        KeyError: ``name`` is not a known model class.
    """
    import importlib

    return getattr(importlib.import_module(MODELS[name]), name)


def build_models(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """Instantiate every named model of ``spec`` (sorted by name).

    Raises:
        ValueError: A parameter is out of range, an endpoint is external without
            ``allow_external_transmission``, a key's environment variable is unset, or a local
            model path is missing; the message starts with ``models.NAME.params``.
        TypeError: A parameter name is unknown.
    """
    models: dict[str, Any] = {}
    for name, entry in sorted((spec or {}).items()):
        try:
            models[name] = model_class(entry["type"])(**(entry.get("params") or {}))
        except (TypeError, ValueError) as err:
            raise type(err)(f"models.{name}.params: {err}") from err
    return models
