"""OpenAI-compatible HTTP clients: ``/v1/embeddings`` and ``/v1/chat/completions``.

Beam-free; built on ``requests`` (already a dependency of apache-beam). Works with any server that
speaks the OpenAI wire format (vLLM, llama.cpp's server, Ollama, LiteLLM, OpenAI itself).

Every call has a timeout (``timeout_seconds``, for connecting, for each wait for data and for
the whole answer), up to ``retries`` further attempts on a transient failure (connection error,
timeout, HTTP 429 or 5xx) after ``backoff_seconds * 2**attempt``, at most ``concurrency`` requests
in flight per client, and answers are kept in a bounded LRU cache, keyed by a sha256 of the
request, of ``cache_size`` texts (embeddings) or answers (chat); 0 disables it. An answer body larger than the client's bound
(generous: 1 MiB plus 256 KiB per text embedded, or plus 6 bytes per ``max_response_chars`` of a
chat answer) is refused without being read further. Redirects are never followed (a 3xx answer
is an error): a redirect could send the document text to another host.

Security:

* Document text leaves the machine only with ``allow_external_transmission=True``; an endpoint
  whose host is ``localhost`` or a loopback address (127.0.0.0/8, ``::1``) counts as local. The
  host is checked as written in ``base_url``: a name other than ``localhost`` (``x.localhost``
  too) is external even when it resolves to a loopback address. A ``base_url`` that ``requests``
  would read differently from Python's URL parser (backslashes, whitespace or control
  characters, a malformed port or IPv6 literal) is refused, so the host checked is the host
  connected to.
* The API key is read from the environment variable named by ``api_key_env`` (surrounding
  whitespace dropped; it must be printable ASCII without spaces) and sent only in the
  ``Authorization`` header. It is not an attribute of the client, not in ``identity``, ``repr``,
  error messages or pickles (a pickled client reads the variable again when it is restored, e.g.
  on a Beam worker). A ``base_url`` with user info or a query string is refused, so a key cannot
  hide there either. Error messages name the host, path and HTTP status only, never what the
  server answered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

from transforms.models import ModelError
from transforms.models.budget import OPENAI_MAX_INPUT_TOKENS, OPENAI_TOKENIZER, ModelBudget
from transforms.models.openai_client import (
    OpenAIClient,
    finite_number,
    is_loopback_url,
    positive_float,
    positive_int,
)

__all__ = ["OpenAIChatModel", "OpenAIEmbedder", "is_loopback_url"]


@dataclass(kw_only=True, eq=False, repr=False)
class OpenAIEmbedder(OpenAIClient):
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
        cache_size: Texts whose vectors are remembered (LRU, by whole requests: see
            :meth:`embed`); 0 disables the cache.
        max_input_tokens: The endpoint's input window, in tokens of ``tokenizer`` (see
            :meth:`budget`); ``None`` for OpenAI's 8191.
        tokenizer: A ``--tokenizer`` spec that counts what the endpoint's model reads (see
            :meth:`budget`); ``None`` for ``tiktoken:cl100k_base``. Neither changes the vectors
            or the identity.

    Attributes:
        identity: ``openai-embeddings:<base_url>/embeddings:model=<model>:dimensions=<n>``.

    Raises:
        ValueError: A setting out of range, a non-loopback host without
            ``allow_external_transmission``, or ``api_key_env`` naming an unset variable.
    """

    _path: ClassVar[str] = "/embeddings"
    _kind: ClassVar[str] = "embeddings"

    dimensions: int | None = None
    batch_size: int = 64
    cache_size: int = 4096
    max_input_tokens: int | None = None
    tokenizer: str | None = None

    def __post_init__(self) -> None:
        if self.dimensions is not None:
            positive_int("dimensions", self.dimensions)
        if self.max_input_tokens is not None:
            positive_int("max_input_tokens", self.max_input_tokens)
        if self.tokenizer is not None and (not isinstance(self.tokenizer, str) or not self.tokenizer.strip()):
            raise ValueError(
                f"tokenizer must be a tokenizer spec such as 'tiktoken:cl100k_base', got {self.tokenizer!r}"
            )
        self.batch_size = positive_int("batch_size", self.batch_size)
        super().__post_init__()
        self.identity = f"openai-embeddings:{self.base_url}{self._path}:model={self.model}:dimensions={self.dimensions}"

    def budget(self) -> ModelBudget:
        """What the endpoint's model reads; no request is made.

        ``ModelBudget(tokenizer, max_tokens, dimension)``: ``tokenizer`` (default
        ``tiktoken:cl100k_base``, the tokenizer of ``text-embedding-3-*`` and
        ``text-embedding-ada-002``), ``max_input_tokens`` (default 8191, their input window) and
        ``dimensions`` (``None`` when not set: the model's own, known after a call).
        """
        return ModelBudget(
            tokenizer=self.tokenizer or OPENAI_TOKENIZER,
            max_tokens=self.max_input_tokens or OPENAI_MAX_INPUT_TOKENS,
            dimension=self.dimensions,
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order.

        The distinct texts, sorted, are sent in requests of ``batch_size``; each request's answer
        is cached whole (weighing its number of texts), so a request already answered is not sent
        again. A text's vector thus depends only on this call's texts, never on what the client
        embedded before: servers whose vectors shift slightly with the batch (padding in batched
        inference) still give the same vectors for the same document on every worker.

        Raises:
            ModelError: transient (after retries) or not (bad status, malformed answer: a wrong
                number of vectors, an ``index`` repeated or out of range, a non-numeric or
                non-finite value, mixed dimensions or not the ``dimensions`` asked for). Vectors
                are put in the order of their ``index`` field (in list order where it is absent).
        """
        texts = list(texts)
        distinct = sorted(set(texts))
        batches = [distinct[i : i + self.batch_size] for i in range(0, len(distinct), self.batch_size)]
        keys = [self._cache_key(batch) for batch in batches]
        results: list[list[list[float]] | None] = [self._cache.get(k) for k in keys]
        self._count(hits=sum(len(b) for b, r in zip(batches, results) if r is not None))
        todo = [j for j, r in enumerate(results) if r is None]
        if len(todo) > 1 and self.concurrency > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="rechunk-embed")
            futures = [self._pool.submit(self._embed_batch, batches[j]) for j in todo]
            try:
                fresh = [f.result() for f in futures]
            finally:  # on a failure, batches not started yet are not sent: the call has failed
                for f in futures:
                    f.cancel()
        else:
            fresh = [self._embed_batch(batches[j]) for j in todo]
        for j, vectors in zip(todo, fresh):
            results[j] = vectors
            self._cache.put(keys[j], vectors, weight=len(batches[j]))
        answered = [vectors for vectors in results if vectors is not None]  # every batch, by now
        by_text = {t: v for batch, vectors in zip(batches, answered) for t, v in zip(batch, vectors)}
        out = [by_text[t] for t in texts]
        dims = {len(v) for v in out}
        if len(dims) > 1:
            raise ModelError(f"embeddings endpoint answered vectors of dimensions {sorted(dims)}", transient=False)
        return [list(v) for v in out]

    def _max_answer_bytes(self, body: Mapping[str, Any]) -> int:
        return (1 << 20) + (256 << 10) * len(body["input"])

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
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < len(batch)
                or vectors[index] is not None
                or not isinstance(vector, list)
                or not vector
                or (self.dimensions is not None and len(vector) != self.dimensions)
            ):
                raise bad
            if not all(finite_number(x) for x in vector):
                raise bad
            vectors[index] = [float(x) for x in vector]
        return vectors  # type: ignore[return-value]


@dataclass(kw_only=True, eq=False, repr=False)
class OpenAIChatModel(OpenAIClient):
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

    _path: ClassVar[str] = "/chat/completions"
    _kind: ClassVar[str] = "chat"

    temperature: float = 0.0
    max_tokens: int | None = None
    max_response_chars: int = 16000
    cache_size: int = 256

    def __post_init__(self) -> None:
        self.temperature = positive_float("temperature", self.temperature, allow_zero=True)
        if self.max_tokens is not None:
            positive_int("max_tokens", self.max_tokens)
        self.max_response_chars = positive_int("max_response_chars", self.max_response_chars)
        super().__post_init__()
        self.identity = (
            f"openai-chat:{self.base_url}{self._path}:model={self.model}"
            f":temperature={self.temperature:g}:max_tokens={self.max_tokens}"
        )

    def _max_answer_bytes(self, body: Mapping[str, Any]) -> int:
        # JSON may escape each character as \\uXXXX (6 bytes); 1 MiB for the rest of the answer.
        return (1 << 20) + 6 * self.max_response_chars

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
            raise ModelError(
                f"chat answer of {len(text)} characters > max_response_chars {self.max_response_chars}", transient=False
            )
        self._cache.put(key, text)
        return text
