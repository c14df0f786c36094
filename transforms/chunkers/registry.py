"""Build a :class:`ChunkerRouter` from a plain, JSON-able routing spec.

Beam-free. The spec is what ``pipelines.config`` makes of the configuration file, already
checked; workers receive it as plain data and call :func:`build_router` in ``DoFn.setup()``, so
nothing heavy is pickled. Spec shape::

    {"chunkers": {NAME: {"type": CLASS_NAME, "params": {...}}},
     "routes": [{"when": {"content_format": [...], "metadata": {KEY: [...]}}, "chunker": NAME}],
     "default": NAME or None}
"""

from __future__ import annotations

from typing import Any, Mapping

from transforms.chunkers.router import ChunkerRouter, Route
from transforms.tokenizers import Tokenizer

__all__ = ["build_router"]


def build_router(spec: Mapping[str, Any], *, tokenizer: Tokenizer) -> ChunkerRouter:
    """Instantiate every named chunker of ``spec`` (injecting ``tokenizer``) and the routes.

    Raises:
        KeyError: A chunker ``type`` is not a known class name.
        TypeError: A parameter name is unknown to its class.
        ValueError: A parameter value is out of range, or a route names a missing chunker.
    """
    from transforms.chunkers import CHUNKERS

    chunkers = {}
    for name, entry in sorted(spec["chunkers"].items()):
        try:
            chunkers[name] = CHUNKERS[entry["type"]].from_dict(entry.get("params") or {}, tokenizer=tokenizer)
        except (TypeError, ValueError) as err:
            raise type(err)(f"chunkers.{name}.params: {err}") from err
    routes = [
        Route(
            chunker=rule["chunker"],
            content_formats=frozenset(rule.get("when", {}).get("content_format") or ()),
            metadata={
                key: frozenset(values)
                for key, values in sorted((rule.get("when", {}).get("metadata") or {}).items())
            },
        )
        for rule in spec.get("routes") or ()
    ]
    return ChunkerRouter(chunkers=chunkers, routes=routes, default=spec.get("default"))
