"""The job's configuration: YAML (or JSON) into a checked routing spec, with option errors.

A configuration names chunker instances (a class from ``transforms.chunkers.CHUNKERS`` and its
parameters, with the reference APIs' names), routing rules (first match wins) and a default. Every
mistake raises :class:`ConfigError` with one line that names where it is and what is wrong; the
job turns that into exit status 2 before the pipeline starts.

A token budget that a chunker's parameters leave out is taken from the job's ``max_tokens``:
``chunk_size`` of ``TokenTextSplitter`` and of the separator splitters with ``length: tokens``,
``max_tokens`` of ``StructureAwareChunker`` (whose ``target_tokens`` and
``min_preferred_tokens`` then default to at most that), and ``max_tokens`` of ``DoclingChunker``
with ``chunker: hybrid``. So ``--max-tokens`` alone resizes the default configuration.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
from collections.abc import Mapping
from typing import Any

import yaml

from transforms.chunkers import CHUNKERS
from transforms.documents import CONTENT_FORMAT_ALIASES, CONTENT_FORMATS, canonical_content_format

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_MAX_TOKENS",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_NODES",
    "ConfigError",
    "load_config",
    "resolve_config",
]

DEFAULT_MAX_TOKENS = 512
#: The largest budget taken (tokens): embedding models read far fewer; a larger value is a typo.
MAX_TOKENS_LIMIT = 1_000_000

#: The configuration used without ``--config`` (also in ``configs/default.yaml``): every format,
#: DoclingDocuments included, to ``StructureAwareChunker``; ``DoclingChunker`` only where a
#: configuration routes to it (``configs/docling.yaml``).
DEFAULT_CONFIG: Mapping[str, Any] = {
    "tokenizer": "tiktoken:cl100k_base",
    "max_tokens": DEFAULT_MAX_TOKENS,
    "chunkers": {"structure": {"type": "StructureAwareChunker", "params": {}}},
    "default": "structure",
}

#: A configuration file is read up to this many bytes; a larger one is refused.
MAX_CONFIG_BYTES = 1024 * 1024
#: Mappings and lists nested deeper than this are refused (before any value is built).
MAX_CONFIG_DEPTH = 64
#: Values a YAML configuration may hold with its aliases expanded (a few hundred bytes of nested
#: aliases would otherwise stand for billions).
MAX_CONFIG_NODES = 100_000

_TOP_KEYS = {
    "tokenizer",
    "max_tokens",
    "recount",
    "models",
    "chunkers",
    "routes",
    "default",
    "embedding",
    "vector_store",
}
#: ``recount:`` values: validation recounts every chunk on an engine of another implementation
#: than the chunkers' (``independent``, the default), or on the same one (``same-engine``: faster;
#: the recount then checks the chunkers' slice arithmetic, not the engine).
RECOUNT_MODES = ("independent", "same-engine")
_WHEN_KEYS = {"content_format", "metadata"}


class ConfigError(ValueError):
    """The configuration file or an option derived from it is wrong; the message is one line."""


def load_config(path: str | None) -> dict[str, Any]:
    """Read a YAML or JSON configuration file (any Beam filesystem), or the default when ``path`` is None.

    Raises:
        ConfigError: The file cannot be read, is not YAML, or is not a mapping.
    """
    if path is None:
        return copy.deepcopy(dict(DEFAULT_CONFIG))
    from apache_beam.io.filesystems import FileSystems

    try:
        with FileSystems.open(path) as f:
            data_bytes = f.read(MAX_CONFIG_BYTES + 1)
    except Exception as err:  # FileSystems raises IOError/BeamIOError/OSError by scheme
        raise ConfigError(f"--config {path}: cannot read the file ({_first_line(err)})") from err
    if len(data_bytes) > MAX_CONFIG_BYTES:
        raise ConfigError(f"--config {path}: larger than {MAX_CONFIG_BYTES:,} bytes; a configuration is a few lines")
    try:
        raw = data_bytes.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"--config {path}: not UTF-8 text (at byte {err.start})") from None
    try:
        data = _parse_json(raw, path) if path.endswith(".json") else _parse_yaml(raw, path)
    except ConfigError:
        raise
    except (yaml.YAMLError, ValueError) as err:
        raise ConfigError(f"--config {path}: not valid YAML/JSON ({_first_line(err)})") from err
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: the top level must be a mapping, got {type(data).__name__}")
    return data


def _parse_json(raw: str, path: str) -> Any:
    """``raw`` as JSON, its nesting checked first (:data:`MAX_CONFIG_DEPTH`).

    Raises:
        ConfigError: Nested deeper than :data:`MAX_CONFIG_DEPTH`.
        ValueError: Not JSON.
    """
    depth = deepest = 0
    in_string = escaped = False
    for char in raw:  # brackets outside strings
        if in_string:
            escaped, in_string = (not escaped and char == "\\"), in_string and (escaped or char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    _check_depth(deepest, path)
    return json.loads(raw)


def _parse_yaml(raw: str, path: str) -> Any:
    """``raw`` as YAML (safe types only), its nesting and the size its aliases expand to checked
    on the token stream and the node graph before any Python value is built.

    Raises:
        ConfigError: Nested deeper than :data:`MAX_CONFIG_DEPTH`, or more than
            :data:`MAX_CONFIG_NODES` values once aliases are expanded.
        yaml.YAMLError: Not YAML.
    """
    depth = deepest = 0
    for token in yaml.scan(raw, Loader=yaml.SafeLoader):  # the scanner is not recursive; the composer is
        if isinstance(token, (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken,
                              yaml.FlowMappingStartToken, yaml.FlowSequenceStartToken)):  # fmt: skip
            depth += 1
            deepest = max(deepest, depth)
            _check_depth(deepest, path)
        elif isinstance(token, (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)):
            depth -= 1
    node = yaml.compose(raw, Loader=yaml.SafeLoader)
    if node is None:
        return None
    if _expanded_size(node) > MAX_CONFIG_NODES:
        raise ConfigError(
            f"--config {path}: its aliases expand to more than {MAX_CONFIG_NODES:,} values; "
            "a configuration needs a few hundred"
        )
    return yaml.SafeLoader(raw).get_single_data()


def _check_depth(depth: int, path: str) -> None:
    if depth > MAX_CONFIG_DEPTH:
        raise ConfigError(f"--config {path}: nested deeper than {MAX_CONFIG_DEPTH} levels")


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes ``root`` holds with every alias expanded (each shared node counted once per
    reference), computed over the graph without expanding it: sizes of shared nodes are memoised,
    in an explicit stack (no recursion)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        if children_done or not children:
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 0) for c in children)
            if sizes[id(node)] > MAX_CONFIG_NODES:
                return sizes[id(node)]
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def _first_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text[:200] or type(err).__name__


def resolve_config(
    data: Mapping[str, Any], *, tokenizer: str | None, max_tokens: int | None, source: str = "config"
) -> dict[str, Any]:
    """Check ``data`` and return the full spec, with command-line values winning.

    Returns:
        ``{"tokenizer", "max_tokens", "chunkers", "routes", "default"}`` with every chunker's
        budget filled in, plus ``recount`` when it is ``same-engine``, ``models``, ``embedding`` (:func:`_resolve_embedding`) and
        ``vector_store`` when configured; JSON-able, for ``transforms.chunkers.registry.build_router``.
        With ``embedding``, ``tokenizer`` and ``max_tokens`` default to the model's own.

    Raises:
        ConfigError: An unknown key, class or parameter, a wrongly typed value, or a route or
            default naming a missing chunker.
    """
    unknown = sorted(str(k) for k in set(data) - _TOP_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_TOP_KEYS))})")
    models = _resolve_models(f"{source}: models", data.get("models"))
    given = {"--tokenizer": tokenizer is not None, "--max-tokens": max_tokens is not None}
    tokenizer = tokenizer if tokenizer is not None else data.get("tokenizer")
    max_tokens = max_tokens if max_tokens is not None else data.get("max_tokens")
    embedding = _resolve_embedding(
        source, data.get("embedding"), models, tokenizer=tokenizer, max_tokens=max_tokens, given=given
    )
    if embedding is not None:
        tokenizer = embedding["tokenizer"]
        max_tokens = max_tokens if max_tokens is not None else embedding["window"]
    spec_tokenizer = tokenizer if tokenizer is not None else "tiktoken:cl100k_base"
    _check_tokenizer(source, spec_tokenizer)
    budget = max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS
    _check_budget(source, budget)
    store = _resolve_vector_store(source, data.get("vector_store"), embedding)
    chunkers = _resolve_chunkers(source, data.get("chunkers"), budget)
    routes_in = data.get("routes") or []
    if not isinstance(routes_in, list):
        raise ConfigError(f"{source}: routes must be a list, got {type(routes_in).__name__}")
    routes = [_resolve_route(f"{source}: routes[{i}]", rule, chunkers) for i, rule in enumerate(routes_in)]
    default = data.get("default")
    if default is not None and (not isinstance(default, str) or default not in chunkers):
        raise ConfigError(f"{source}: default names chunker {default!r}, not one of {sorted(chunkers)}")
    recount = data.get("recount", RECOUNT_MODES[0])
    if recount not in RECOUNT_MODES:
        raise ConfigError(f"{source}: recount must be one of {', '.join(RECOUNT_MODES)}, got {recount!r:.60}")
    spec = {
        "tokenizer": spec_tokenizer,
        "max_tokens": budget,
        "chunkers": chunkers,
        "routes": routes,
        "default": default,
    }
    if recount != RECOUNT_MODES[0]:  # only then: configurations without it keep their exact spec
        spec["recount"] = recount
    if models:  # only then: configurations without models keep their exact spec
        spec["models"] = models
    if embedding is not None:
        spec["embedding"] = embedding
    if store is not None:
        spec["vector_store"] = store
    return spec


def _resolve_embedding(
    source: str,
    embedding: Any,
    models: Mapping[str, Any],
    *,
    tokenizer: Any,
    max_tokens: Any,
    given: Mapping[str, bool],
) -> dict[str, Any] | None:
    """The ``embedding:`` section: ``{model: NAME}``, ``NAME`` an embedder under ``models:``.

    Returns ``{"model", "tokenizer", "window", "dimension"}``: the model's own tokenizer spec
    (counting what the model sees, special tokens and prefix included), its input window in
    those tokens and its vector size (``None`` when only an embedding tells). The job's budget
    is counted in that tokenizer; a ``tokenizer`` given elsewhere must be the same, and a
    ``max_tokens`` must be within the window, so that no chunk the model would truncate is made.
    """
    if embedding is None:
        return None
    where = f"{source}: embedding"
    if not isinstance(embedding, dict):
        raise ConfigError(f"{where}: must be a mapping with 'model', got {embedding!r}")
    extra = sorted(map(str, set(embedding) - {"model"}))
    if extra:
        raise ConfigError(f"{where}: unknown key {extra[0]!r} (known: model)")
    name = embedding.get("model")
    if not isinstance(name, str) or name not in models:
        raise ConfigError(
            f"{where}.model: names {name!r}, not a model under models: ({', '.join(sorted(models)) or 'none'})"
        )
    from transforms.models.registry import model_class

    entry = models[name]
    cls: Any = model_class(entry["type"])
    if not hasattr(cls, "embed") or not hasattr(cls, "budget"):
        raise ConfigError(f"{where}.model: {name!r} is a {entry['type']}, not an embedding model")
    try:
        budget = cls(**entry["params"]).budget()
    except (TypeError, ValueError, ImportError, OSError) as err:
        raise ConfigError(f"{where}.model: {name!r}: {_first_line(err)}") from None
    if tokenizer is not None and tokenizer != budget.tokenizer:
        flag = "--tokenizer" if given["--tokenizer"] else f"{source}: tokenizer"
        raise ConfigError(
            f"{flag} {tokenizer!r:.80}: with embedding model {name}, chunks are counted in the model's own "
            "tokenizer; leave the tokenizer out"
        )
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > budget.max_tokens:
        flag = "--max-tokens" if given["--max-tokens"] else f"{source}: max_tokens"
        raise ConfigError(
            f"{flag} {max_tokens}: over the input window of embedding model {name} ({budget.max_tokens} tokens, "
            "special tokens included); the model would truncate such chunks (leave it out to use the window)"
        )
    return {"model": name, "tokenizer": budget.tokenizer, "window": budget.max_tokens, "dimension": budget.dimension}


def _resolve_vector_store(source: str, store: Any, embedding: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``vector_store:`` section, checked by :func:`transforms.stores.check_store_spec`; it
    needs an ``embedding:`` section (the vectors' model)."""
    if store is None:
        return None
    if embedding is None:
        raise ConfigError(f"{source}: vector_store needs an embedding: section naming the model that makes its vectors")
    from transforms.stores import check_store_spec

    if isinstance(store, dict) and "uri_env" in store:
        store = _uri_from_environment(source, store)
    try:
        return check_store_spec(store)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{source}: {_first_line(err)}") from None


def _uri_from_environment(source: str, store: Mapping[str, Any]) -> dict[str, Any]:
    """``vector_store:`` with ``uri_env: NAME`` made ``uri: $NAME`` (read here, on the driver;
    the URI may hold a password, so it is never shown)."""
    from transforms.stores import CONFIG_KEYS

    unknown = sorted(str(k) for k in store if k not in CONFIG_KEYS)
    if unknown:
        raise ConfigError(f"{source}: vector_store.{unknown[0]:.40}: unknown key (known: {', '.join(CONFIG_KEYS)})")
    name = store["uri_env"]
    if "uri" in store:
        raise ConfigError(f"{source}: vector_store: give uri or uri_env, not both")
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise ConfigError(f"{source}: vector_store.uri_env: the name of an environment variable, got {name!r:.60}")
    value = os.environ.get(name)
    if not value:
        raise ConfigError(f"{source}: vector_store.uri_env: the environment variable {name} is not set")
    return {**{k: v for k, v in store.items() if k != "uri_env"}, "uri": value}


def _check_tokenizer(where: str, tokenizer: Any) -> None:
    """The tokenizer spec must be text (it is checked when the tokenizer is loaded)."""
    if not isinstance(tokenizer, str):
        raise ConfigError(f"{where}: tokenizer must be a string, got {tokenizer!r}")


def _check_budget(where: str, budget: Any) -> None:
    """The job's budget (tokens) must be a positive integer up to :data:`MAX_TOKENS_LIMIT`."""
    if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
        raise ConfigError(f"{where}: max_tokens must be a positive integer, got {budget!r}")
    if budget > MAX_TOKENS_LIMIT:
        raise ConfigError(f"{where}: max_tokens must be at most {MAX_TOKENS_LIMIT:,}, got {budget:,}")


def _resolve_chunkers(where: str, chunkers_in: Any, budget: int) -> dict[str, Any]:
    """The ``chunkers:`` section, each instance checked and its budget filled in."""
    if not isinstance(chunkers_in, dict) or not chunkers_in:
        raise ConfigError(f"{where}: chunkers must be a non-empty mapping of name -> {{type, params}}")
    return {
        str(name): _resolve_chunker(f"{where}: chunkers.{name}", entry, budget) for name, entry in chunkers_in.items()
    }


def _resolve_models(where: str, models_in: Any) -> dict[str, Any]:
    """Check the ``models:`` section: ``NAME: {type: MODEL_CLASS, params: {...}}``.

    Values are checked when the models are built (``pipelines.rechunk.load_spec`` builds every chunker once on
    the driver): a missing local model path, an unset ``api_key_env`` variable or an external
    endpoint without ``allow_external_transmission`` stops the job there with one line.
    """
    from transforms.models.registry import MODELS, model_class

    if models_in is None:
        return {}
    if not isinstance(models_in, dict):
        raise ConfigError(f"{where}: must be a mapping of name -> {{type, params}}")
    models: dict[str, Any] = {}
    for name, entry in models_in.items():
        at = f"{where}.{name}"
        if not isinstance(entry, dict) or "type" not in entry:
            raise ConfigError(f"{at}: must be a mapping with 'type' and optional 'params'")
        extra = sorted(set(entry) - {"type", "params"})
        if extra:
            raise ConfigError(f"{at}: unknown key {extra[0]!r} (known: params, type)")
        if not isinstance(entry["type"], str) or entry["type"] not in MODELS:
            raise ConfigError(f"{at}: unknown model type {entry['type']!r} (known: {', '.join(sorted(MODELS))})")
        params = entry.get("params") or {}
        if not isinstance(params, dict):
            raise ConfigError(f"{at}.params: must be a mapping, got {params!r}")
        model: Any = model_class(entry["type"])
        known = sorted(p for p in inspect.signature(model.__init__).parameters if p != "self")
        for key in params:
            if key not in known:
                raise ConfigError(
                    f"{at}.params: unknown parameter {key!r} for {entry['type']} (known: {', '.join(known)})"
                )
        models[str(name)] = {"type": entry["type"], "params": dict(params)}
    return models


def _resolve_chunker(where: str, entry: Any, budget: int) -> dict[str, Any]:
    if not isinstance(entry, dict) or "type" not in entry:
        raise ConfigError(f"{where}: must be a mapping with 'type' and optional 'params'")
    extra = sorted(set(entry) - {"type", "params"})
    if extra:
        raise ConfigError(f"{where}: unknown key {extra[0]!r} (known: params, type)")
    cls_name = entry["type"]
    if not isinstance(cls_name, str) or cls_name not in CHUNKERS:
        raise ConfigError(f"{where}: unknown chunker type {cls_name!r} (known: {', '.join(sorted(CHUNKERS))})")
    if not isinstance(entry.get("params") or {}, dict):
        raise ConfigError(f"{where}.params: must be a mapping, got {entry.get('params')!r}")
    params = dict(entry.get("params") or {})
    cls = CHUNKERS[cls_name]
    known = sorted(p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "tokenizer"))
    for key in params:
        if key not in known:
            raise ConfigError(f"{where}.params: unknown parameter {key!r} for {cls_name} (known: {', '.join(known)})")
    budget_parameter = cls.budget_parameter(params)
    if budget_parameter:
        params.setdefault(budget_parameter, budget)
        value = params[budget_parameter]
        if isinstance(value, int) and not isinstance(value, bool) and value > budget:
            # Every chunk between the two budgets would be made, then dead-lettered.
            raise ConfigError(
                f"{where}.params: {budget_parameter} {value} is over the job's max_tokens {budget} "
                f"(leave it out to use the job's)"
            )
    return {"type": cls_name, "params": params}


def _resolve_route(where: str, rule: Any, chunkers: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(rule, dict) or "chunker" not in rule:
        raise ConfigError(f"{where}: must be a mapping with 'chunker' and 'when'")
    if not isinstance(rule["chunker"], str) or rule["chunker"] not in chunkers:
        raise ConfigError(f"{where}: names chunker {rule['chunker']!r}, not one of {sorted(chunkers)}")
    when = rule.get("when") or {}
    if not isinstance(when, dict):
        raise ConfigError(f"{where}.when: must be a mapping with keys among content_format, metadata, got {when!r}")
    unknown = sorted(map(str, set(when) - _WHEN_KEYS))
    if unknown:
        raise ConfigError(f"{where}.when: unknown key {unknown[0]!r} (keys are content_format, metadata)")
    formats = when.get("content_format") or []
    formats = [formats] if isinstance(formats, str) else formats
    if not isinstance(formats, list):
        raise ConfigError(f"{where}.when.content_format: must be a list of formats, got {formats!r}")
    bad = [f for f in formats if not isinstance(f, str) or canonical_content_format(f) is None]
    if bad:
        raise ConfigError(
            f"{where}.when.content_format: {bad[0]!r} is not one of {sorted(CONTENT_FORMATS)} (nor an alias of one)"
        )
    formats = sorted({CONTENT_FORMAT_ALIASES[f.strip().lower()] for f in formats})
    metadata = when.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ConfigError(f"{where}.when.metadata: must be a mapping of key -> accepted values")
    for key, values in metadata.items():
        for value in values if isinstance(values, list) else [values]:
            if not isinstance(value, (str, int, float, bool)) and value is not None:
                raise ConfigError(f"{where}.when.metadata.{key}: values must be scalars, got {value!r}")
    metadata = {
        str(k): sorted(v if isinstance(v, list) else [v], key=repr)
        for k, v in sorted(metadata.items(), key=lambda kv: str(kv[0]))
    }
    return {"when": {"content_format": sorted(formats), "metadata": metadata}, "chunker": rule["chunker"]}
