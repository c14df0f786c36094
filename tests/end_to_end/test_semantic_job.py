"""Model-backed chunkers inside the Beam job, against the local OpenAI-compatible server.

Every document is accounted for (chunks or a dead-letter row), chunks are verbatim slices within
the budget by an independent recount, a failing model dead-letters with ``model_error`` or falls
back as configured, the report counts model calls and fallbacks, and an API key planted in the
environment appears in no output, log or configuration hash.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipelines.rechunk import main
from tests.conftest import read_output, write_documents

KEY = "sk-planted-SECRET-7d2a41b0"
MAX_TOKENS = 64
TOPICS = {
    "cats": "Cats purr when cats feel calm. A cat sleeps while cats dream. Cats chase mice and cats nap.",
    "money": "Bonds yield interest for investors. Investors buy bonds for yield. Interest rates move bond yields.",
    "rain": "Rain falls from grey clouds. Clouds bring rain and storms. Storm clouds drop heavy rain.",
}


def _config(server, **extra_chunker_params) -> str:
    return json.dumps(
        {
            "max_tokens": MAX_TOKENS,
            "models": {
                "bow": {
                    "type": "OpenAIEmbedder",
                    "params": {
                        "base_url": server.base_url,
                        "model": "bow",
                        "api_key_env": "RECHUNK_TEST_KEY",
                        "backoff_seconds": 0,
                        "retries": 1,
                    },
                },
                "chat": {
                    "type": "OpenAIChatModel",
                    "params": {
                        "base_url": server.base_url,
                        "model": "m",
                        "api_key_env": "RECHUNK_TEST_KEY",
                        "backoff_seconds": 0,
                        "retries": 1,
                        "timeout_seconds": 5,
                    },
                },
            },
            "chunkers": {
                "embedding": {"type": "EmbeddingSemanticChunker", "params": {"embeddings": "bow", "buffer_size": 0}},
                "chat": {"type": "SemanticChunker", "params": {"llm": "chat", "chunk_size": 200}},
                "chat_fallback": {
                    "type": "SemanticChunker",
                    "params": {"llm": "chat", "chunk_size": 200, "fallback_on_transient_error": True},
                },
                "refined": {
                    "type": "StructureAwareChunker",
                    "params": {
                        "target_tokens": 40,
                        "min_preferred_tokens": 0,
                        "cuts": "greedy",  # the prompts asserted below are those of greedy cuts
                        "semantic_mode": "refiner",
                        "semantic_refiner": {"llm": "chat"},
                    },
                },
            },
            "routes": [
                {"when": {"metadata": {"chunker": ["chat"]}}, "chunker": "chat"},
                {"when": {"metadata": {"chunker": ["chat_fallback"]}}, "chunker": "chat_fallback"},
                {"when": {"content_format": ["markdown"]}, "chunker": "refined"},
            ],
            "default": "embedding",
        }
    )


def _documents(tmp_path: Path) -> tuple[Path, dict[str, dict]]:
    cats, money, rain = TOPICS["cats"], TOPICS["money"], TOPICS["rain"]
    rows: list[dict[str, Any]] = [
        {"id": "e1", "content": f"{cats} {money}\n{rain} {cats}\n", "content_format": "text", "metadata": None},
        {"id": "e2", "content": " ".join([money] * 12) + "\n\n" + rain, "content_format": "text", "metadata": None},
        {
            "id": "c1",
            "content": f"{cats}\n\n{cats}\n\n{money}\n\n{rain}",
            "content_format": "text",
            "metadata": {"chunker": "chat"},
        },
        {
            "id": "c2-FAIL500",
            "content": f"FAIL500 {cats}\n\n{money}",
            "content_format": "text",
            "metadata": {"chunker": "chat"},
        },
        {
            "id": "c3-FAIL500",
            "content": f"FAIL500 {cats}\n\n{money}",
            "content_format": "text",
            "metadata": {"chunker": "chat_fallback"},
        },
        {
            "id": "c4-BADJSON",
            "content": f"BADJSON {cats}\n\n{money}",
            "content_format": "text",
            "metadata": {"chunker": "chat_fallback"},
        },
        {
            "id": "m1",
            "content": f"# Notes\n\n{cats}\n\n{cats}\n\n{money}\n\n{money}\n\n{rain}\n",
            "content_format": "markdown",
            "metadata": None,
        },
    ]
    path = write_documents(tmp_path / "in" / "docs.parquet", rows)
    return path, {r["id"]: r for r in rows}


@pytest.fixture
def job(openai_server, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("RECHUNK_TEST_KEY", KEY)
    openai_server.chat_rules.update({"FAIL500": ("status", 500), "BADJSON": "not json at all"})
    path, docs = _documents(tmp_path)
    config = tmp_path / "semantic.json"
    config.write_text(_config(openai_server))
    out = tmp_path / "out"
    caplog.set_level(logging.DEBUG)
    assert (
        main(
            [
                "--input",
                str(path),
                "--output",
                str(out),
                "--config",
                str(config),
                "--direct_running_mode=in_memory",
                "--max-dead-letter-fraction",
                "1",
            ]
        )
        == 0
    )
    return out, docs, openai_server


@pytest.mark.slow
def test_every_document_is_accounted_for_and_chunks_are_exact(job, recount):
    out, docs, _ = job
    chunks = read_output(out, "chunks")
    dead = read_output(out, "dead_letter")
    assert {r["document_id"]: r["reason"] for r in dead} == {"c2-FAIL500": "model_error", "c4-BADJSON": "model_error"}
    assert "HTTP 500" in next(r["detail"] for r in dead if r["document_id"] == "c2-FAIL500")
    assert {c["document_id"] for c in chunks} | {r["document_id"] for r in dead} == set(docs)
    by_chunker = {c["document_id"]: c["chunker"] for c in chunks}
    assert by_chunker["e1"] == "EmbeddingSemanticChunker" and by_chunker["c1"] == "SemanticChunker"
    assert by_chunker["m1"] == "StructureAwareChunker"
    for c in chunks:
        content = docs[c["document_id"]]["content"]
        assert content[c["start_offset"] : c["end_offset"]] == c["text"]
        assert recount(c["embedding_text"]) == c["token_count"] <= MAX_TOKENS
    # e2's first group (one topic, 12 times) is over the budget: split by the recursive rules.
    assert sum(c["document_id"] == "e2" for c in chunks) > 2
    # All non-whitespace of each document is in its chunks.
    for doc_id in ("e1", "e2", "c1"):
        text = "".join(c["text"] for c in sorted(chunks, key=lambda c: c["chunk_index"]) if c["document_id"] == doc_id)
        assert "".join(text.split()) == "".join(docs[doc_id]["content"].split())


@pytest.mark.slow
def test_fallback_is_in_metadata_and_report(job):
    out, _, server = job
    chunks = read_output(out, "chunks")
    fallback = [json.loads(c["metadata"]) for c in chunks if c["document_id"] == "c3-FAIL500"]
    assert fallback and all(m["model_fallback"] == "transient_model_error" for m in fallback)
    assert not any("model_fallback" in json.loads(c["metadata"]) for c in chunks if c["document_id"] == "e1")
    report = json.loads((out / "report.json").read_text())
    assert report["dead_letter_by_reason"] == {"model_error": 2}
    assert report["model"]["fallbacks"] == 1
    prompts = [body["messages"][-1]["content"] for path, _, body in server.requests if path.endswith("/completions")]
    assert any(p.startswith("[0] 'Cats purr") for p in prompts)  # the refiner was asked about m1
    sent = len(server.requests)
    assert report["model"]["calls"] == sent  # every request the server saw, retries included


@pytest.mark.slow
def test_the_api_key_appears_nowhere(job, caplog, capsys):
    out, _, server = job
    assert all(h.get("Authorization") == f"Bearer {KEY}" for _, h, _ in server.requests)
    seen = []
    for path in out.rglob("*"):
        if path.is_file():
            seen.append(path.read_bytes().decode("utf-8", "replace"))
            if path.suffix == ".parquet":
                seen.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
    seen.append(caplog.text)
    captured = capsys.readouterr()
    seen += [captured.out, captured.err]
    assert seen and not any(KEY in s for s in seen)


@pytest.mark.parametrize(
    "models, env, message",
    [
        ({"x": {"type": "Nope"}}, {}, "models.x: unknown model type 'Nope'"),
        (
            {"x": {"type": "OpenAIEmbedder", "params": {"url": "http://127.0.0.1/v1"}}},
            {},
            "models.x.params: unknown parameter 'url' for OpenAIEmbedder",
        ),
        (
            {
                "x": {
                    "type": "OpenAIEmbedder",
                    "params": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout_seconds": 0},
                }
            },
            {},
            "models.x.params: timeout_seconds must be a number > 0 and <= 3600, got 0",
        ),
        (
            {
                "x": {
                    "type": "OpenAIEmbedder",
                    "params": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "RECHUNK_UNSET_KEY"},
                }
            },
            {},
            "environment variable RECHUNK_UNSET_KEY (api_key_env) is not set",
        ),
        (
            {"x": {"type": "OpenAIEmbedder", "params": {"base_url": "https://api.example.com/v1", "model": "m"}}},
            {},
            "set allow_external_transmission: true",
        ),
        (
            {"x": {"type": "SentenceTransformerEmbedder", "params": {"path": "/nonexistent/model"}}},
            {},
            "is not a local sentence-transformers model directory",
        ),
        (
            {"y": {"type": "OpenAIChatModel", "params": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}},
            {},
            "embeddings names model 'x', not one of the models section's ['y']",
        ),
        (
            {"x": {"type": "OpenAIChatModel", "params": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}},
            {},
            "embeddings must be an Embedder",
        ),
    ],
)
def test_model_option_mistakes_exit_2_with_one_line(capsys, tmp_path, monkeypatch, models, env, message):
    monkeypatch.delenv("RECHUNK_UNSET_KEY", raising=False)
    path, _ = _documents(tmp_path)
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "models": models,
                "chunkers": {"e": {"type": "EmbeddingSemanticChunker", "params": {"embeddings": "x"}}},
                "default": "e",
            }
        )
    )
    assert main(["--input", str(path), "--output", str(tmp_path / "out"), "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rechunk: error: "), err
    assert message in err[0]
