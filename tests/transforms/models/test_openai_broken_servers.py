"""The HTTP model clients against a broken or malicious server and unsafe settings (no network).

The clients refuse, without leaking document text or the key: a redirect that carried document text to
another host, a base_url that requests reads with another host than the loopback check did, an
answer that never ends or trickles in slower than the timeout, JSON that is not an answer
(integers beyond float range, nesting deeper than the parser's recursion), settings that
overflow a timer, an API key that cannot go in a header.
"""

from __future__ import annotations

import json

import pytest

from tests.support.openai_server import FakeOpenAIServer, bag_of_words
from transforms.models import ModelError
from transforms.models.openai import OpenAIChatModel, OpenAIEmbedder, is_loopback_url

KEY = "sk-planted-SECRET-a7c3e1"
TEXT = "the secret document text"


def _embedder(server, **kwargs):
    kwargs.setdefault("backoff_seconds", 0)
    kwargs.setdefault("retries", 0)
    return OpenAIEmbedder(base_url=server.base_url, model="bow", **kwargs)


@pytest.fixture
def other_host():
    """A second server standing for another host a redirect points to."""
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_sends_nothing_elsewhere(openai_server, other_host, monkeypatch, code):
    monkeypatch.setenv("RECHUNK_TEST_KEY", KEY)
    embedder = _embedder(openai_server, api_key_env="RECHUNK_TEST_KEY", retries=2)
    openai_server.embedding_faults.append(("redirect", code, other_host.base_url + "/embeddings"))
    with pytest.raises(ModelError, match=f"HTTP {code} redirect, not followed") as info:
        embedder.embed([TEXT])
    assert not info.value.transient and embedder.calls == 1
    assert other_host.requests == []
    chat = OpenAIChatModel(base_url=openai_server.base_url, model="m", backoff_seconds=0)
    openai_server.chat_answers.append(("redirect", code, other_host.base_url + "/chat/completions"))
    with pytest.raises(ModelError, match="redirect"):
        chat.complete([{"role": "user", "content": TEXT}])
    assert other_host.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.example\\.localhost/v1",  # Python reads host 'evil.example\.localhost', requests 'evil.example'
        "http://evil.localhost/v1",  # resolution up to the resolver
        "http://127.0.0.1.evil.example/v1",
        "http://[::1]evil.example/v1",
        "http://localhost%00.evil.example/v1",
        "http://0.0.0.0:8000/v1",
        "http://127.1/v1",
        "http://2130706433/v1",
        "http://localhost./v1",
    ],
)
def test_base_url_tricks_are_not_loopback(url):
    assert not is_loopback_url(url)
    with pytest.raises(ValueError):
        OpenAIEmbedder(base_url=url, model="m")


@pytest.mark.parametrize(
    "url, message",
    [
        ("http://127.0.0.1\t.evil.example/v1", "must not contain whitespace"),
        (" http://127.0.0.1/v1", "must not contain whitespace"),
        ("http://localhost\\@evil.example/v1", "backslashes"),
        ("http://127.0.0.1:80:80/v1", "not a valid URL"),
        ("http://127.0.0.1:99999/v1", "not a valid URL"),
        ("http://[127.0.0.1]/v1", "not a valid URL"),
        ("http://localhost@evil.example/v1", "user info"),
        ("http://evil.example#@127.0.0.1/v1", "user info"),
        ("http://127.0.0.1:8000/v1/embeddings", "the API root"),
        ("http://127.0.0.1:8000/v1/embeddings/", "the API root"),
    ],
)
def test_malformed_base_urls_are_refused_with_a_reason(url, message):
    with pytest.raises(ValueError, match=message):
        OpenAIEmbedder(base_url=url, model="m", allow_external_transmission=True)


@pytest.mark.parametrize(
    "url", ["http://LOCALHOST:8/v1", "http://[::1]:8/v1", "HTTP://127.0.0.2:8/v1/", "http://localhost:8/v1"]
)
def test_plain_loopback_urls_are_local(url):
    assert is_loopback_url(url)
    OpenAIEmbedder(base_url=url, model="m")


def test_chat_base_url_must_not_name_the_endpoint():
    with pytest.raises(ValueError, match="without '/chat/completions'"):
        OpenAIChatModel(base_url="http://127.0.0.1:8000/v1/chat/completions", model="m")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"timeout_seconds": 1e10}, "timeout_seconds must be a number > 0 and <= 3600, got 10000000000.0"),
        ({"retries": 1000}, r"retries must be an integer in \[0, 10\], got 1000"),
        ({"backoff_seconds": 1e6}, "backoff_seconds must be a number >= 0 and <= 60, got 1000000.0"),
        ({"timeout_seconds": float("nan")}, "timeout_seconds must be a number"),
        ({"retries": True}, "retries must be an integer"),
    ],
)
def test_settings_that_would_overflow_a_timer_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", model="m", **kwargs)


def test_an_answer_that_never_ends_is_refused(openai_server):
    embedder = _embedder(openai_server, retries=2, batch_size=4)
    openai_server.embedding_faults.append(("endless",))
    with pytest.raises(ModelError, match=r"the answer is over \d+ bytes") as info:
        embedder.embed(["a", "b"])
    assert not info.value.transient and embedder.calls == 1  # never retried: it would do it again


@pytest.mark.slow
def test_the_timeout_bounds_the_whole_answer(openai_server):
    # Each byte comes well within the timeout, the whole answer does not.
    embedder = _embedder(openai_server, timeout_seconds=0.5, retries=1)
    openai_server.embedding_faults.extend([("trickle", 0.05), ("trickle", 0.05)])
    with pytest.raises(ModelError, match=r"no answer within 0.5 s \(after 2 attempts\)") as info:
        embedder.embed(["a"])
    assert info.value.transient
    # A trickle that ends in time is an answer.
    patient = _embedder(openai_server, timeout_seconds=30)
    openai_server.embedding_faults.append(("trickle", 0.0005))
    assert patient.embed(["a b"]) == [bag_of_words("a b")]


@pytest.mark.parametrize(
    "body",
    [
        '{"data": [{"index": 0, "embedding": [1' + "0" * 400 + ", 1]}]}",  # int beyond float range
        '{"data": [{"index": 0, "embedding": [1e400, 1]}]}',  # parses as inf
        '{"data": [{"index": 0, "embedding": [NaN, 1]}]}',
        '{"data": [{"index": 0, "embedding": [true, 1]}]}',
        '{"data": [{"index": 0.0, "embedding": [0, 1]}]}',
        '{"data": [{"index": -1, "embedding": [0, 1]}]}',
        '{"data": [{"index": 0, "embedding": []}]}',
        '{"data": [{"index": 0, "embedding": "0,1"}]}',
        '{"data": [{"index": 0, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0]}]}',
        '{"data": []}',
        '{"data": null}',
        "[" * 100000 + "]" * 100000,  # deeper than the JSON parser's recursion
        '"just a string"',
    ],
)
def test_malformed_embeddings_are_a_model_error_not_a_crash(openai_server, body):
    embedder = _embedder(openai_server)
    openai_server.embedding_faults.append(("raw", body))
    with pytest.raises(ModelError) as info:
        embedder.embed(["x"])
    assert not info.value.transient


def test_out_of_order_index_is_put_in_order(openai_server):
    embedder = _embedder(openai_server)
    body = {"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]}
    openai_server.embedding_faults.append(("raw", json.dumps(body)))
    # Texts are sent sorted and distinct: "a" is input 0, "b" input 1.
    assert embedder.embed(["b", "a"]) == [[0.0, 1.0], [1.0, 0.0]]


@pytest.mark.parametrize("status", [400, 401, 500])
def test_a_server_echoing_the_key_does_not_put_it_in_the_error(openai_server, monkeypatch, status):
    monkeypatch.setenv("RECHUNK_TEST_KEY", KEY)
    embedder = _embedder(openai_server, api_key_env="RECHUNK_TEST_KEY")
    openai_server.embedding_faults.append(("echo", status))
    with pytest.raises(ModelError) as info:
        embedder.embed([TEXT])
    assert KEY in json.dumps(openai_server.requests[-1][1])  # the server did get it
    shown = [str(info.value), repr(info.value), repr(info.value.__cause__), repr(info.value.__context__)]
    assert not any(KEY in s or TEXT in s for s in shown)


@pytest.mark.parametrize("value", [f"{KEY}\nX-Injected: 1", f"{KEY} extra", "sk-ключ"])
def test_a_key_that_cannot_go_in_a_header_is_refused_without_showing_it(openai_server, monkeypatch, value):
    monkeypatch.setenv("RECHUNK_TEST_KEY", value)
    with pytest.raises(ValueError, match=r"RECHUNK_TEST_KEY .api_key_env. holds characters") as info:
        _embedder(openai_server, api_key_env="RECHUNK_TEST_KEY")
    assert value not in str(info.value) and KEY not in str(info.value)


def test_a_key_with_a_trailing_newline_is_used_stripped(openai_server, monkeypatch):
    monkeypatch.setenv("RECHUNK_TEST_KEY", f"  {KEY}\n")
    _embedder(openai_server, api_key_env="RECHUNK_TEST_KEY").embed(["a"])
    assert openai_server.requests[-1][1]["Authorization"] == f"Bearer {KEY}"


def test_a_huge_chat_answer_is_refused_without_reading_it_all(openai_server):
    chat = OpenAIChatModel(base_url=openai_server.base_url, model="m", backoff_seconds=0, retries=0)
    openai_server.chat_answers.append(("endless",))
    with pytest.raises(ModelError, match="the answer is over"):
        chat.complete([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize(
    "body",
    [
        '{"choices": []}',
        '{"choices": [{"message": {"content": null}}]}',
        '{"choices": [{"message": {"content": ["a"]}}]}',
        '{"choices": "x"}',
        "[1, 2]",
        "",
    ],
)
def test_chat_answers_without_text_are_model_errors(openai_server, body):
    chat = OpenAIChatModel(base_url=openai_server.base_url, model="m", backoff_seconds=0, retries=0)
    openai_server.chat_answers.append(("raw", body))
    with pytest.raises(ModelError) as info:
        chat.complete([{"role": "user", "content": "hi"}])
    assert not info.value.transient


def test_vectors_not_of_the_dimensions_asked_for_are_malformed(openai_server):
    embedder = _embedder(openai_server, dimensions=32)  # the test server answers 64
    with pytest.raises(ModelError, match="malformed") as info:
        embedder.embed(["a"])
    assert not info.value.transient
    assert openai_server.requests[-1][2]["dimensions"] == 32


@pytest.mark.slow
def test_a_failed_batch_stops_the_batches_not_sent_yet(openai_server):
    embedder = _embedder(openai_server, batch_size=1, concurrency=2)
    openai_server.embedding_faults.extend([("status", 400)] + [("sleep", 0.2)] * 9)
    with pytest.raises(ModelError, match="HTTP 400"):
        embedder.embed([f"text {i}" for i in range(10)])
    # Two in flight when the failure is seen, a few more started before it is; never all ten
    # (waiting for every batch would delay the error by all their timeouts and retries).
    assert len(openai_server.requests) < 10
    # The client's threads and sessions serve the next call.
    openai_server.reset()
    assert embedder.embed(["x", "y", "z"]) == [bag_of_words(t) for t in ("x", "y", "z")]


def test_a_vector_does_not_depend_on_what_was_embedded_before(openai_server):
    # A server whose vectors shift slightly with the batch, as batched GPU inference's do.
    openai_server.embedding_batch_noise = 1e-6
    document = ["c cc", "a", "b bb"]
    fresh = _embedder(openai_server, batch_size=2).embed(document)
    # Another worker embedded other documents first, sharing sentences with this one.
    worker = _embedder(openai_server, batch_size=2)
    worker.embed(["a", "z"]), worker.embed(["b bb"])
    assert worker.embed(document) == fresh
    assert worker.embed(document) == fresh and worker.cache_hits == 3  # the same requests: cached
