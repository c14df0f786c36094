"""Build a :class:`ChunkerRouter` from a plain, JSON-able routing spec.

Beam-free. The spec is what ``pipelines.config`` makes of the configuration file, already
checked; workers receive it as plain data and call :func:`build_router` in ``DoFn.setup()``, so
nothing heavy is pickled. Spec shape::

    {"models": {NAME: {"type": MODEL_CLASS, "params": {...}}},   # optional
     "chunkers": {NAME: {"type": CLASS_NAME, "params": {...}}},
     "routes": [{"when": {"content_format": [...], "metadata": {KEY: [...]}}, "chunker": NAME}],
     "default": NAME or None}

A chunker parameter listed in the class's ``model_parameters`` names a model of ``models``
(``embeddings: NAME``, ``llm: NAME``); ``semantic_refiner`` is a mapping ``{llm: NAME, ...}`` that
becomes a :class:`~transforms.chunkers.refinement.ChatBoundaryRefiner`. The models are built
once per call (so once per worker in ``DoFn.setup()``) and shared by the chunkers naming them;
the router keeps them in its ``models`` attribute, for the Beam layer's usage counters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transforms.chunkers.router import ChunkerRouter, Route
from transforms.tokenizers import Tokenizer

__all__ = ["build_router", "resolve_models"]


def build_router(spec: Mapping[str, Any], *, tokenizer: Tokenizer) -> ChunkerRouter:
    """Instantiate every named chunker of ``spec`` (injecting ``tokenizer``) and the routes.

    Raises:
        KeyError: A chunker ``type`` is not a known class name.
        TypeError: A parameter name is unknown to its class.
        ValueError: A parameter value is out of range, or a route names a missing chunker.
    """
    from transforms.chunkers import CHUNKERS
    from transforms.models.registry import build_models

    models = build_models(spec.get("models"))
    chunkers = {}
    for name, entry in sorted(spec["chunkers"].items()):
        try:
            cls = CHUNKERS[entry["type"]]
            params = resolve_models(cls, entry.get("params") or {}, models)
            chunkers[name] = cls.from_dict(params, tokenizer=tokenizer)
        except (TypeError, ValueError) as err:
            raise type(err)(f"chunkers.{name}.params: {err}") from err
    routes = [
        Route(
            chunker=rule["chunker"],
            content_formats=frozenset(rule.get("when", {}).get("content_format") or ()),
            metadata={
                key: frozenset(values) for key, values in sorted((rule.get("when", {}).get("metadata") or {}).items())
            },
        )
        for rule in spec.get("routes") or ()
    ]
    return ChunkerRouter(chunkers=chunkers, routes=routes, default=spec.get("default"), models=models)


def resolve_models(cls: type, params: Mapping[str, Any], models: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with each model name of ``cls.model_parameters`` replaced by the model itself.

    Raises:
        ValueError: A name is not among ``models``.
    """
    out = dict(params)
    for key in getattr(cls, "model_parameters", ()):
        value = out.get(key)
        if value is None:
            continue
        if key == "semantic_refiner":
            from transforms.chunkers.refinement import ChatBoundaryRefiner

            if not isinstance(value, Mapping) or "llm" not in value:
                raise ValueError(f"semantic_refiner must be a mapping with llm: MODEL_NAME, got {value!r}")
            rest = {k: v for k, v in value.items() if k != "llm"}
            out[key] = ChatBoundaryRefiner(llm=_model(models, "semantic_refiner.llm", value["llm"]), **rest)
        else:
            out[key] = _model(models, key, value)
    return out


def _model(models: Mapping[str, Any], key: str, name: Any) -> Any:
    if not isinstance(name, str) or name not in models:
        raise ValueError(f"{key} names model {name!r}, not one of the models section's {sorted(models)}")
    return models[name]
