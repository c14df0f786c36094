"""The OpenAI-compatible HTTP clients against the local test server (no network)."""

from __future__ import annotations

import pickle

import pytest

from tests.support.openai_server import bag_of_words
from transforms.models import ChatModel, Embedder, ModelError
from transforms.models.openai import OpenAIChatModel, OpenAIEmbedder, is_loopback_url

KEY = "sk-planted-SECRET-4f1c9e"


def _embedder(server, **kwargs):
    kwargs.setdefault("backoff_seconds", 0)
    return OpenAIEmbedder(base_url=server.base_url, model="bow", **kwargs)


def test_embeddings_in_order_batched_and_cached(openai_server):
    embedder = _embedder(openai_server, batch_size=2, concurrency=2)
    assert isinstance(embedder, Embedder)
    texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon", "zeta"]
    assert embedder.embed(texts) == [bag_of_words(t) for t in texts]
    # 4 distinct texts in batches of 2: two requests; the repeated text is sent once.
    assert embedder.calls == 2 and len(openai_server.requests) == 2
    assert sorted(t for _, _, body in openai_server.requests for t in body["input"]) == sorted(set(texts))
    assert embedder.embed(["gamma", "zeta"]) == [bag_of_words("gamma"), bag_of_words("zeta")]
    assert embedder.calls == 2 and embedder.cache_hits == 2


def test_cache_is_bounded(openai_server):
    embedder = _embedder(openai_server, cache_size=2, batch_size=1)
    embedder.embed(["a", "b", "c"])
    assert embedder.cache_entries == 2
    embedder.embed(["a"])  # evicted (least recently used): sent again
    assert embedder.calls == 4
    # A request of more texts than the cache holds is not kept.
    big = _embedder(openai_server, cache_size=2, batch_size=3)
    big.embed(["a", "b", "c"]), big.embed(["a", "b", "c"])
    assert big.calls == 2 and big.cache_entries == 0
    no_cache = _embedder(openai_server, cache_size=0)
    no_cache.embed(["a"]), no_cache.embed(["a"])
    assert no_cache.calls == 2 and no_cache.cache_entries == 0


@pytest.mark.parametrize("fault", [("status", 500), ("status", 429), ("status", 503), ("drop",)])
def test_transient_failures_are_retried(openai_server, fault):
    embedder = _embedder(openai_server, retries=2)
    openai_server.embedding_faults.extend([fault, fault])
    assert embedder.embed(["x y"]) == [bag_of_words("x y")]
    assert embedder.calls == 3


def test_retries_are_bounded_and_the_error_is_transient(openai_server):
    embedder = _embedder(openai_server, retries=1)
    openai_server.embedding_faults.extend([("status", 500)] * 3)
    with pytest.raises(ModelError, match=r"HTTP 500 .after 2 attempts") as info:
        embedder.embed(["x"])
    assert info.value.transient and embedder.calls == 2


def test_timeout_is_transient(openai_server):
    embedder = _embedder(openai_server, retries=0, timeout_seconds=0.2)
    openai_server.embedding_faults.append(("sleep", 1.0))
    with pytest.raises(ModelError, match=r"no answer within 0.2 s") as info:
        embedder.embed(["x"])
    assert info.value.transient


def test_client_errors_and_malformed_answers_are_not_transient(openai_server):
    embedder = _embedder(openai_server, retries=3)
    openai_server.embedding_faults.append(("status", 400))
    with pytest.raises(ModelError) as info:
        embedder.embed(["x"])
    assert not info.value.transient and embedder.calls == 1
    openai_server.embedding_faults.append(("raw", "not json"))
    with pytest.raises(ModelError, match="not JSON") as info:
        embedder.embed(["y"])
    assert not info.value.transient
    openai_server.embedding_faults.append(("raw", '{"data": [{"embedding": [1, "x"]}]}'))
    with pytest.raises(ModelError, match="malformed"):
        embedder.embed(["z"])


def test_chat_completion_cached_and_validated(openai_server):
    chat = OpenAIChatModel(base_url=openai_server.base_url, model="m", backoff_seconds=0, max_response_chars=10)
    assert isinstance(chat, ChatModel)
    openai_server.chat_answers.extend(["hello", "x" * 11])
    messages = [{"role": "user", "content": "hi"}]
    assert chat.complete(messages) == "hello"
    assert chat.complete(messages) == "hello" and chat.cache_hits == 1 and chat.calls == 1
    with pytest.raises(ModelError, match="max_response_chars"):
        chat.complete([{"role": "user", "content": "other"}])
    body = openai_server.requests[0][2]
    assert body == {"model": "m", "messages": messages, "temperature": 0.0}


def test_external_endpoint_needs_permission():
    assert is_loopback_url("http://127.0.0.5:1/v1") and is_loopback_url("http://[::1]:8/v1")
    assert is_loopback_url("http://localhost/v1") and not is_loopback_url("https://api.example.com/v1")
    assert not is_loopback_url("http://127.0.0.1.example.com/v1")
    with pytest.raises(ValueError, match="allow_external_transmission"):
        OpenAIEmbedder(base_url="https://api.example.com/v1", model="m")
    with pytest.raises(ValueError, match="allow_external_transmission"):
        OpenAIChatModel(base_url="http://10.0.0.1/v1", model="m")
    # Allowed explicitly: constructing sends nothing.
    OpenAIChatModel(base_url="https://api.example.com/v1", model="m", allow_external_transmission=True)


def test_api_key_from_environment_only_and_never_shown(openai_server, monkeypatch):
    with pytest.raises(ValueError, match=r"environment variable RECHUNK_TEST_KEY .api_key_env. is not set"):
        _embedder(openai_server, api_key_env="RECHUNK_TEST_KEY")
    monkeypatch.setenv("RECHUNK_TEST_KEY", KEY)
    embedder = _embedder(openai_server, api_key_env="RECHUNK_TEST_KEY", retries=0)
    embedder.embed(["a"])
    assert openai_server.requests[-1][1]["Authorization"] == f"Bearer {KEY}"
    openai_server.embedding_faults.append(("status", 401))
    with pytest.raises(ModelError) as info:
        embedder.embed(["b"])
    shown = [embedder.identity, repr(embedder), str(info.value), repr(vars(embedder))]
    assert not any(KEY in s for s in shown)
    assert KEY.encode() not in pickle.dumps(embedder)
    # A restored client reads the variable again (a worker has its own environment).
    restored = pickle.loads(pickle.dumps(embedder))
    restored.embed(["c"])
    assert openai_server.requests[-1][1]["Authorization"] == f"Bearer {KEY}"
    with pytest.raises(ValueError, match="user info"):
        OpenAIEmbedder(base_url=f"http://user:{KEY}@127.0.0.1:1/v1", model="m")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"timeout_seconds": 0}, "timeout_seconds must be a number > 0 and <= 3600, got 0"),
        ({"retries": -1}, "retries must be an integer in \\[0, 10\\], got -1"),
        ({"concurrency": 0}, "concurrency must be an integer >= 1, got 0"),
        ({"cache_size": "big"}, "cache_size must be an integer >= 0, got 'big'"),
        ({"base_url": "ftp://127.0.0.1/v1"}, "base_url must be an http"),
    ],
)
def test_bad_settings_name_the_value(kwargs, message):
    kwargs = {"base_url": "http://127.0.0.1:9/v1", "model": "m", **kwargs}
    with pytest.raises(ValueError, match=message):
        OpenAIEmbedder(**kwargs)


@pytest.mark.slow
def test_concurrency_is_bounded(openai_server):
    embedder = _embedder(openai_server, batch_size=1, concurrency=2)
    openai_server.embedding_faults.extend([("sleep", 0.1)] * 6)
    texts = [f"text {i}" for i in range(6)]
    assert embedder.embed(texts) == [bag_of_words(t) for t in texts]
    assert len(openai_server.requests) == 6
    assert 1 <= openai_server.max_in_flight <= 2


def test_close_releases_the_pool_and_every_session_and_the_client_works_after(openai_server):
    embedder = _embedder(openai_server, batch_size=1, concurrency=2)
    texts = ["one", "two", "three"]
    assert embedder.embed(texts) == [bag_of_words(t) for t in texts]
    pool, sessions = embedder._pool, list(embedder._sessions)
    assert pool is not None and len(sessions) >= 2  # one per pool thread that sent a batch
    closed = []
    for session in sessions:
        session.close = lambda closed=closed, session=session: closed.append(session)
    embedder.close()
    assert embedder._pool is None and embedder._sessions == [] and pool._shutdown
    assert sorted(map(id, closed)) == sorted(map(id, sessions))
    embedder.close()  # idempotent
    assert len(closed) == len(sessions)
    # Used again: a new session, answers unchanged (the cache is kept).
    assert embedder.embed(["four"]) == [bag_of_words("four")]
    assert len(embedder._sessions) == 1 and embedder._sessions[0] not in sessions

    chat = OpenAIChatModel(base_url=openai_server.base_url, model="m", backoff_seconds=0, cache_size=0)
    openai_server.chat_answers.extend(["hello", "again"])
    assert chat.complete([{"role": "user", "content": "hi"}]) == "hello"
    first = chat._sessions[0]
    chat.close()
    assert chat._sessions == []
    assert chat.complete([{"role": "user", "content": "hi"}]) == "again"
    assert chat._sessions and chat._sessions[0] is not first
    assert pickle.loads(pickle.dumps(chat))._sessions == []
