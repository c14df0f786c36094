"""OpenAI-compatible HTTP clients: ``/v1/embeddings`` and ``/v1/chat/completions``.

Beam-free; built on ``requests`` (already a dependency of apache-beam). Works with any server that
speaks the OpenAI wire format (vLLM, llama.cpp's server, Ollama, LiteLLM, OpenAI itself).

Every call has a timeout (``timeout_seconds``), up to ``retries`` further attempts on a transient
failure (connection error, timeout, HTTP 429 or 5xx) after ``backoff_seconds * 2**attempt``, at
most ``concurrency`` requests in flight per client, and answers are kept in a bounded LRU cache of
``cache_size`` entries (0 disables it), keyed by a sha256 of the request.

Security:

* Document text leaves the machine only with ``allow_external_transmission=True``; an endpoint
  whose host is ``localhost`` or a loopback address (127.0.0.0/8, ``::1``) counts as local. The
  host is checked as written in ``base_url``: a name other than ``localhost`` is external even
  when it resolves to a loopback address.
* The API key is read from the environment variable named by ``api_key_env`` and sent only in the
  ``Authorization`` header. It is not an attribute of the client, not in ``identity``, ``repr``,
  error messages or pickles (a pickled client reads the variable again when it is restored, e.g.
  on a Beam worker). A ``base_url`` with user info or a query string is refused, so a key cannot
  hide there either.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import math
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from transforms.models import ModelError

__all__ = ["OpenAIChatModel", "OpenAIEmbedder", "is_loopback_url"]


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host, as written, is ``localhost`` or a loopback IP (127.0.0.0/8, ``::1``)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _positive_float(name: str, value: Any, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or (
        value < 0 if allow_zero else value <= 0
    ):
        raise ValueError(f"{name} must be a number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return float(value)


class _LRU:
    """A thread-safe LRU map of at most ``size`` entries (``size`` 0 keeps nothing)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            if key not in self._data:
                return None
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: str, value: Any) -> None:
        if self.size == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class _OpenAIClient:
    """What both clients share: endpoint checks, key handling, retries, concurrency, cache, counts."""

    _path: str = ""
    _kind: str = ""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None,
        allow_external_transmission: bool,
        timeout_seconds: float,
        retries: int,
        backoff_seconds: float,
        concurrency: int,
        cache_size: int,
    ) -> None:
        if not isinstance(base_url, str) or not base_url:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL with a host, got {base_url!r}")
        if parts.username or parts.password or parts.query or parts.fragment:
            # Not echoed: user info or a query string is where a key would hide.
            raise ValueError("base_url must not carry user info, a query or a fragment; "
                             "give the key through api_key_env")
        if not isinstance(allow_external_transmission, bool):
            raise ValueError(f"allow_external_transmission must be true or false, got {allow_external_transmission!r}")
        if not is_loopback_url(base_url) and not allow_external_transmission:
            raise ValueError(
                f"base_url host {parts.hostname!r} is not a loopback address: document text would leave "
                "this machine; set allow_external_transmission: true to allow it"
            )
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
            raise ValueError(f"api_key_env must be the name of an environment variable, got {api_key_env!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.allow_external_transmission = allow_external_transmission
        self.timeout_seconds = _positive_float("timeout_seconds", timeout_seconds)
        self.retries = _positive_int("retries", retries, minimum=0)
        self.backoff_seconds = _positive_float("backoff_seconds", backoff_seconds, allow_zero=True)
        self.concurrency = _positive_int("concurrency", concurrency)
        self.cache_size = _positive_int("cache_size", cache_size, minimum=0)
        self._key()  # fail now (before the pipeline starts) when the variable is missing
        self._setup()

    def _setup(self) -> None:
        self._cache = _LRU(self.cache_size)
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._local = threading.local()
        self._counts_lock = threading.Lock()
        #: HTTP requests sent (retries included) and answers served from the cache.
        self.calls = 0
        self.cache_hits = 0

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_cache", "_slots", "_local", "_counts_lock", "calls", "cache_hits")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._key()
        self._setup()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity!r})"

    @property
    def cache_entries(self) -> int:
        """How many answers the cache holds now."""
        return len(self._cache)

    def _key(self) -> str | None:
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ValueError(f"environment variable {self.api_key_env} (api_key_env) is not set")
        return value

    def _session(self):
        session = getattr(self._local, "session", None)
        if session is None:
            import requests

            session = self._local.session = requests.Session()
            session.trust_env = False  # no proxies or .netrc credentials picked up behind our back
        return session

    def _count(self, calls: int = 0, hits: int = 0) -> None:
        with self._counts_lock:
            self.calls += calls
            self.cache_hits += hits

    def _post(self, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON to the endpoint; return the parsed JSON answer.

        Raises:
            ModelError: transient after the retries (connection, timeout, 429, 5xx), or not
                (another status, an answer that is not JSON).
        """
        import requests

        url = self.base_url + self._path
        headers = {"Content-Type": "application/json"}
        key = self._key()
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        where = f"{self._kind} endpoint {urlsplit(url).hostname}{urlsplit(url).path}"
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_seconds * 2 ** (attempt - 1))
            self._count(calls=1)
            try:
                with self._slots:
                    response = self._session().post(url, data=data, headers=headers, timeout=self.timeout_seconds)
            except requests.Timeout:
                problem = f"{where}: no answer within {self.timeout_seconds:g} s"
                continue
            except requests.RequestException as err:
                problem = f"{where}: connection failed ({type(err).__name__})"
                continue
            status = response.status_code
            if status == 429 or status >= 500:
                problem = f"{where}: HTTP {status}"
                continue
            if status != 200:
                raise ModelError(f"{where}: HTTP {status}", transient=False)
            try:
                return response.json()
            except ValueError:
                raise ModelError(f"{where}: the answer is not JSON", transient=False) from None
        raise ModelError(f"{problem} (after {self.retries + 1} attempts)", transient=True)

    def _cache_key(self, payload: Any) -> str:
        blob = json.dumps([self.identity, payload], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class OpenAIEmbedder(_OpenAIClient):
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1`` (``/embeddings`` is appended).
        model: The ``model`` field sent.
        api_key_env: Name of the environment variable holding the API key, or ``None`` to send
            no ``Authorization`` header.
        allow_external_transmission: Must be true for a non-loopback host.
        dimensions: The ``dimensions`` field sent (models that can shorten vectors), or ``None``.
        batch_size: Texts per request.
        timeout_seconds: Per request.
        retries: Further attempts after a transient failure.
        backoff_seconds: Wait before the first retry; doubled for each next one.
        concurrency: Requests in flight at once (batches of one ``embed`` call run in parallel).
        cache_size: Texts whose vectors are remembered (LRU); 0 disables the cache.

    Attributes:
        identity: ``openai-embeddings:<base_url>/embeddings:model=<model>:dimensions=<n>``.

    Raises:
        ValueError: A setting out of range, a non-loopback host without
            ``allow_external_transmission``, or ``api_key_env`` naming an unset variable.
    """

    _path = "/embeddings"
    _kind = "embeddings"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        allow_external_transmission: bool = False,
        dimensions: int | None = None,
        batch_size: int = 64,
        timeout_seconds: float = 30.0,
        retries: int = 2,
        backoff_seconds: float = 0.5,
        concurrency: int = 2,
        cache_size: int = 4096,
    ) -> None:
        if dimensions is not None:
            _positive_int("dimensions", dimensions)
        self.dimensions = dimensions
        self.batch_size = _positive_int("batch_size", batch_size)
        super().__init__(
            base_url=base_url, model=model, api_key_env=api_key_env,
            allow_external_transmission=allow_external_transmission, timeout_seconds=timeout_seconds,
            retries=retries, backoff_seconds=backoff_seconds, concurrency=concurrency, cache_size=cache_size,
        )
        self.identity = f"openai-embeddings:{self.base_url}{self._path}:model={model}:dimensions={dimensions}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; cached texts are not sent again.

        Raises:
            ModelError: transient (after retries) or not (bad status, malformed answer: a wrong
                number of vectors, a non-numeric or non-finite value, mixed dimensions).
        """
        texts = list(texts)
        keys = [self._cache_key(t) for t in texts]
        out: list[list[float] | None] = [self._cache.get(k) for k in keys]
        hits = sum(v is not None for v in out)
        self._count(hits=hits)
        todo = sorted({t: None for t, v in zip(texts, out) if v is None})  # each distinct text once
        batches = [todo[i : i + self.batch_size] for i in range(0, len(todo), self.batch_size)]
        if len(batches) > 1 and self.concurrency > 1:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
                results = list(pool.map(self._embed_batch, batches))
        else:
            results = [self._embed_batch(b) for b in batches]
        fresh = {t: v for batch, vectors in zip(batches, results) for t, v in zip(batch, vectors)}
        for i, text in enumerate(texts):
            if out[i] is None:
                out[i] = fresh[text]
                self._cache.put(keys[i], fresh[text])
        dims = {len(v) for v in out}
        if len(dims) > 1:
            raise ModelError(f"embeddings endpoint answered vectors of dimensions {sorted(dims)}", transient=False)
        return [list(v) for v in out]

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        answer = self._post(body)
        bad = ModelError(f"embeddings endpoint answered malformed data for {len(batch)} texts", transient=False)
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != len(batch):
            raise bad
        vectors: list[list[float] | None] = [None] * len(batch)
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise bad
            index = item.get("index", position)
            vector = item.get("embedding")
            if (not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(batch)
                    or vectors[index] is not None or not isinstance(vector, list) or not vector):
                raise bad
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
                raise bad
            vectors[index] = [float(x) for x in vector]
        return vectors  # type: ignore[return-value]


class OpenAIChatModel(_OpenAIClient):
    """Chat completions from an OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint.

    Sent with ``temperature`` (default 0) and, when given, ``max_tokens`` (bounds the answer's
    generation on the server's side). An answer longer than ``max_response_chars`` is refused.

    Args:
        base_url, model, api_key_env, allow_external_transmission, timeout_seconds, retries,
            backoff_seconds, concurrency, cache_size: As :class:`OpenAIEmbedder` (the cache keeps
            whole answers, keyed by the messages).
        temperature: Sampling temperature sent; 0 for answers as repeatable as the server allows.
        max_tokens: The ``max_tokens`` field sent, or ``None`` to leave it to the server.
        max_response_chars: Longest answer accepted, in characters.

    Attributes:
        identity: ``openai-chat:<base_url>/chat/completions:model=<model>:temperature=<t>:max_tokens=<n>``.
    """

    _path = "/chat/completions"
    _kind = "chat"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        allow_external_transmission: bool = False,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        max_response_chars: int = 16000,
        timeout_seconds: float = 30.0,
        retries: int = 2,
        backoff_seconds: float = 0.5,
        concurrency: int = 2,
        cache_size: int = 256,
    ) -> None:
        self.temperature = _positive_float("temperature", temperature, allow_zero=True)
        if max_tokens is not None:
            _positive_int("max_tokens", max_tokens)
        self.max_tokens = max_tokens
        self.max_response_chars = _positive_int("max_response_chars", max_response_chars)
        super().__init__(
            base_url=base_url, model=model, api_key_env=api_key_env,
            allow_external_transmission=allow_external_transmission, timeout_seconds=timeout_seconds,
            retries=retries, backoff_seconds=backoff_seconds, concurrency=concurrency, cache_size=cache_size,
        )
        self.identity = (f"openai-chat:{self.base_url}{self._path}:model={model}"
                         f":temperature={self.temperature:g}:max_tokens={max_tokens}")

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The assistant's reply text.

        Raises:
            ModelError: transient (after retries) or not (bad status, no text in the answer,
                an answer over ``max_response_chars``).
        """
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
        key = self._cache_key(messages)
        cached = self._cache.get(key)
        if cached is not None:
            self._count(hits=1)
            return cached
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        answer = self._post(body)
        try:
            text = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            text = None
        if not isinstance(text, str):
            raise ModelError("chat endpoint answered without message text", transient=False)
        if len(text) > self.max_response_chars:
            raise ModelError(f"chat answer of {len(text)} characters > max_response_chars "
                             f"{self.max_response_chars}", transient=False)
        self._cache.put(key, text)
        return text
