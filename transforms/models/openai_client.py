"""The HTTP client both OpenAI-compatible models share: URL and option checks, retries, cache.

Beam-free; built on ``requests``. :class:`OpenAIClient` holds what
:class:`~transforms.models.openai.OpenAIEmbedder` and
:class:`~transforms.models.openai.OpenAIChatModel` have in common: the ``base_url`` checks (see
:func:`is_loopback_url`), the API key read from the environment on use, timeouts, bounded retries
with exponential backoff, a concurrency bound, a bounded LRU cache of answers, the counts of calls
and cache hits, and :meth:`OpenAIClient.close`. The security rules are in
:mod:`transforms.models.openai`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import math
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

from transforms.models import ModelError

__all__ = ["OpenAIClient", "finite_number", "is_loopback_url", "positive_float", "positive_int"]


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host, as written, is ``localhost`` or a loopback IP (127.0.0.0/8, ``::1``).

    Only the name ``localhost`` itself counts (not ``x.localhost``, whose resolution is up to the
    resolver), and a URL that ``requests`` (urllib3) would read with another host does not count.
    """
    try:
        host = (urlsplit(url).hostname or "").lower()
        connected = _urllib3_host(url)
    except ValueError:
        return False
    if host != connected:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _urllib3_host(url: str) -> str:
    """The host ``requests`` connects to for ``url`` (urllib3's parser), lowercased, no brackets.

    Raises:
        ValueError: urllib3 cannot parse ``url``.
    """
    from urllib3.exceptions import LocationParseError
    from urllib3.util import parse_url

    try:
        host = parse_url(url).host or ""
    except LocationParseError:
        raise ValueError("not a URL that requests can use") from None
    return host.lower().removeprefix("[").removesuffix("]")


def _check_base_url(base_url: Any, path: str) -> str:
    """``base_url`` without trailing slashes, or ValueError saying what is wrong with it.

    The URL is not echoed where a credential could hide in it (user info, query, fragment).
    """
    if not isinstance(base_url, str) or not base_url:
        raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
    if any(c.isspace() or c == "\\" or ord(c) < 32 or ord(c) == 127 for c in base_url):
        raise ValueError(f"base_url must not contain whitespace, control characters or backslashes, got {base_url!r}")
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 -- raises ValueError for a port out of range or not a number
    except ValueError as err:
        raise ValueError(f"base_url is not a valid URL ({err}), got {base_url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url must be an http(s) URL with a host, got {base_url!r}")
    if (
        parts.username is not None
        or parts.password is not None
        or "@" in parts.netloc
        or parts.query
        or parts.fragment
        or "?" in base_url
        or "#" in base_url
    ):
        # Not echoed: user info or a query string is where a key would hide.
        raise ValueError("base_url must not carry user info, a query or a fragment; give the key through api_key_env")
    try:
        connected = _urllib3_host(base_url)
    except ValueError:
        connected = None
    if connected != parts.hostname.lower():
        raise ValueError(
            f"base_url {base_url!r} is read with another host by requests ({connected!r}) "
            f"than by Python's URL parser ({parts.hostname!r}); write it plainly"
        )
    base_url = base_url.rstrip("/")
    if base_url.lower().endswith(path):
        raise ValueError(
            f"base_url is the API root (e.g. http://127.0.0.1:8000/v1), without {path!r}; got {base_url!r}"
        )
    return base_url


def positive_int(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` when it is an integer in ``[minimum, maximum]`` (no bool), else ValueError naming it."""
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
    return value


def positive_float(name: str, value: Any, *, allow_zero: bool = False, maximum: float | None = None) -> float:
    """``value`` as a float when it is a finite number ``> 0`` (``>= 0`` with ``allow_zero``) and at
    most ``maximum``, else ValueError naming it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or (value < 0 if allow_zero else value <= 0)
        or (maximum is not None and value > maximum)
    ):
        bound = f"{'>=' if allow_zero else '>'} 0" + ("" if maximum is None else f" and <= {maximum:g}")
        raise ValueError(f"{name} must be a number {bound}, got {value!r}")
    return float(value)


def finite_number(x: Any) -> bool:
    """A JSON number (not a bool) that is a finite float, including integers too large for one."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an int beyond float range
        return False


#: What ``api_key_env`` must look like: an environment variable's name.
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

#: Bounds of the settings that would otherwise overflow a timer or wait for hours.
MAX_TIMEOUT_SECONDS = 3600.0
MAX_RETRIES = 10
MAX_BACKOFF_SECONDS = 60.0
#: Read size of an answer body, bytes; the whole-answer deadline is checked between reads.
_READ_BYTES = 65536


class _Late(Exception):
    """The answer did not arrive whole within the timeout."""


class _LRU:
    """A thread-safe LRU map whose entries' weights sum to at most ``size`` (0 keeps nothing).

    An entry weighs 1 unless ``put`` says otherwise (a batch of embeddings weighs its texts).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            if key not in self._data:
                return None
            self._data.move_to_end(key)
            return self._data[key][0]

    def put(self, key: str, value: Any, weight: int = 1) -> None:
        if weight > self.size:
            return
        with self._lock:
            if key in self._data:
                self._weight -= self._data.pop(key)[1]
            self._data[key] = (value, weight)
            self._weight += weight
            while self._weight > self.size:
                self._weight -= self._data.popitem(last=False)[1][1]

    def __len__(self) -> int:
        return len(self._data)


@dataclass(kw_only=True, eq=False, repr=False)
class OpenAIClient:
    """What both clients share: endpoint checks, key handling, retries, concurrency, cache, counts.

    The settings are keyword-only dataclass fields, checked in :meth:`__post_init__`; a client
    adds its own fields, checks them in its ``__post_init__`` before calling this one's, and sets
    :attr:`identity` after it. Their meaning is documented on
    :class:`~transforms.models.openai.OpenAIEmbedder`.
    """

    _path: ClassVar[str] = ""
    _kind: ClassVar[str] = ""

    base_url: str
    model: str
    api_key_env: str | None = None
    allow_external_transmission: bool = False
    timeout_seconds: float = 30.0
    retries: int = 2
    backoff_seconds: float = 0.5
    concurrency: int = 2
    cache_size: int
    #: Names the endpoint, model and settings (set by each client); never a credential.
    identity: str = field(init=False)

    def __post_init__(self) -> None:
        self.base_url = _check_base_url(self.base_url, self._path)
        if not isinstance(self.allow_external_transmission, bool):
            raise ValueError(
                f"allow_external_transmission must be true or false, got {self.allow_external_transmission!r}"
            )
        if not is_loopback_url(self.base_url) and not self.allow_external_transmission:
            raise ValueError(
                f"base_url host {urlsplit(self.base_url).hostname!r} is not a loopback address: document text "
                "would leave this machine; set allow_external_transmission: true to allow it"
            )
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"model must be a non-empty string, got {self.model!r}")
        if self.api_key_env is not None and not (
            isinstance(self.api_key_env, str) and _VARIABLE_NAME.fullmatch(self.api_key_env)
        ):
            # Never echoed: a key pasted where its variable's name belongs would be printed.
            raise ValueError(
                "api_key_env must be the name of an environment variable (letters, digits and _, "
                "not starting with a digit, at most 128 characters), not the key itself"
            )
        self.timeout_seconds = positive_float("timeout_seconds", self.timeout_seconds, maximum=MAX_TIMEOUT_SECONDS)
        self.retries = positive_int("retries", self.retries, minimum=0, maximum=MAX_RETRIES)
        self.backoff_seconds = positive_float(
            "backoff_seconds", self.backoff_seconds, allow_zero=True, maximum=MAX_BACKOFF_SECONDS
        )
        self.concurrency = positive_int("concurrency", self.concurrency)
        self.cache_size = positive_int("cache_size", self.cache_size, minimum=0)
        self._key()  # fail now (before the pipeline starts) when the variable is missing
        self._setup()

    def _setup(self) -> None:
        self._cache = _LRU(self.cache_size)
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._local = threading.local()
        self._counts_lock = threading.Lock()
        # Threads for the batches of one embed call, kept (with their HTTP sessions) for the next.
        self._pool: ThreadPoolExecutor | None = None
        # Every thread's HTTP session (one per thread, see _session), so that close() reaches all.
        self._sessions: list[Any] = []
        self._sessions_lock = threading.Lock()
        #: HTTP requests sent (retries included) and answers served from the cache.
        self.calls = 0
        self.cache_hits = 0

    def __getstate__(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in self.__dict__.items()
            if k
            not in (
                "_cache",
                "_slots",
                "_local",
                "_counts_lock",
                "_pool",
                "_sessions",
                "_sessions_lock",
                "calls",
                "cache_hits",
            )
        }

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
        value = (os.environ.get(self.api_key_env) or "").strip()
        if not value:
            raise ValueError(f"environment variable {self.api_key_env} (api_key_env) is not set")
        if not all(33 <= ord(c) <= 126 for c in value):
            # Not echoed. Such a key would fail in the HTTP header on every call, with errors
            # that may quote it.
            raise ValueError(
                f"environment variable {self.api_key_env} (api_key_env) holds characters "
                "that cannot go in an HTTP header (printable ASCII without spaces only)"
            )
        return value

    def _session(self):
        session = getattr(self._local, "session", None)
        if session is None:
            import requests

            session = self._local.session = requests.Session()
            session.trust_env = False  # no proxies or .netrc credentials picked up behind our back
            with self._sessions_lock:
                self._sessions.append(session)
        return session

    def close(self) -> None:
        """Release the thread pool and every thread's HTTP session (their pooled connections).

        Idempotent. The cache and the counts are kept; a later call opens a new session (and, for
        an embed call with several batches, a new pool).
        """
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        with self._sessions_lock:
            sessions, self._sessions = self._sessions, []
            # Sessions stay reachable from their threads' locals otherwise: new ones from now on.
            self._local = threading.local()
        for session in sessions:
            session.close()

    def _count(self, calls: int = 0, hits: int = 0) -> None:
        with self._counts_lock:
            self.calls += calls
            self.cache_hits += hits

    def _max_answer_bytes(self, body: Mapping[str, Any]) -> int:
        """Largest answer body accepted for ``body``, in bytes."""
        return 1 << 20

    def _post(self, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON to the endpoint; return the parsed JSON answer.

        Raises:
            ModelError: transient after the retries (connection, timeout, 429, 5xx), or not
                (another status, a redirect, an answer over the size bound or not JSON).
        """
        url = self.base_url + self._path
        headers = {"Content-Type": "application/json"}
        key = self._key()
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        where = f"{self._kind} endpoint {urlsplit(url).hostname}{urlsplit(url).path}"
        limit = self._max_answer_bytes(body)
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_seconds * 2 ** (attempt - 1))
            self._count(calls=1)
            raw, problem = self._attempt(url, data, headers, limit, where)
            if raw is None:
                continue
            try:
                return json.loads(raw)
            except (ValueError, RecursionError):
                raise ModelError(f"{where}: the answer is not JSON", transient=False) from None
        raise ModelError(f"{problem} (after {self.retries + 1} attempts)", transient=True)

    def _attempt(
        self, url: str, data: bytes, headers: Mapping[str, str], limit: int, where: str
    ) -> tuple[bytes | None, str]:
        """One POST of :meth:`_post`: ``(body, "")``, or ``(None, problem)`` when trying again may help.

        Raises:
            ModelError: (not transient) A redirect, another status than 200, 429 or 5xx, an answer
                over ``limit`` bytes, or a request ``requests`` refuses to send.
        """
        import requests

        deadline = time.monotonic() + self.timeout_seconds
        try:
            with (
                self._slots,
                self._session().post(
                    url,
                    data=data,
                    headers=headers,
                    timeout=self.timeout_seconds,
                    allow_redirects=False,
                    stream=True,
                ) as response,
            ):
                status = response.status_code
                if status == 429 or status >= 500:
                    return None, f"{where}: HTTP {status}"
                if 300 <= status < 400:
                    raise ModelError(
                        f"{where}: HTTP {status} redirect, not followed (document text goes to base_url only)",
                        transient=False,
                    )
                if status != 200:
                    raise ModelError(f"{where}: HTTP {status}", transient=False)
                return self._read(response, limit, deadline, where), ""
        except _Late:
            return None, f"{where}: no answer within {self.timeout_seconds:g} s"
        except requests.Timeout:
            return None, f"{where}: no answer within {self.timeout_seconds:g} s"
        except (
            requests.ConnectionError,
            requests.exceptions.ChunkedEncodingError,
            requests.exceptions.ContentDecodingError,
        ) as err:
            return None, f"{where}: connection failed ({type(err).__name__})"
        except requests.RequestException as err:  # e.g. an invalid URL or header: trying again won't help
            raise ModelError(f"{where}: request failed ({type(err).__name__})", transient=False) from None

    @staticmethod
    def _read(response: Any, limit: int, deadline: float, where: str) -> bytes:
        """The whole (decoded) body of ``response``, at most ``limit`` bytes, by ``deadline``.

        Raises:
            _Late: The deadline passed (a server sending its answer slowly).
            ModelError: (not transient) The body is over ``limit`` bytes.
        """
        import urllib3

        parts: list[bytes] = []
        size = 0
        try:
            while True:
                if time.monotonic() > deadline:
                    raise _Late
                block = response.raw.read1(_READ_BYTES, decode_content=True)
                if not block:
                    return b"".join(parts)
                size += len(block)
                if size > limit:
                    raise ModelError(f"{where}: the answer is over {limit} bytes", transient=False)
                parts.append(block)
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError):
            raise _Late from None
        except (urllib3.exceptions.HTTPError, OSError) as err:
            import requests

            raise requests.ConnectionError(type(err).__name__) from None

    def _cache_key(self, payload: Any) -> str:
        blob = json.dumps([self.identity, payload], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()
