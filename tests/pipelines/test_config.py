"""Configuration: the shipped default file, budget defaults, and the resolved spec."""

from __future__ import annotations

import pytest
import yaml

from pipelines.config import DEFAULT_CONFIG, ConfigError, load_config, resolve_config
from tests.conftest import REPO


def test_configs_default_yaml_is_the_built_in_default():
    assert yaml.safe_load((REPO / "configs" / "default.yaml").read_text()) == DEFAULT_CONFIG
    assert load_config(str(REPO / "configs" / "default.yaml")) == load_config(None)


def test_budgets_left_out_take_the_jobs_max_tokens():
    spec = resolve_config(
        {
            "chunkers": {
                "tok": {"type": "TokenTextSplitter", "params": {"chunk_overlap": 0}},
                "rec": {"type": "RecursiveCharacterTextSplitter", "params": {"length": "tokens"}},
                "chars": {"type": "RecursiveCharacterTextSplitter"},
                "sized": {"type": "CharacterTextSplitter", "params": {"length": "tokens", "chunk_size": 100}},
                "hybrid": {"type": "DoclingChunker"},
                "hier": {"type": "DoclingChunker", "params": {"chunker": "hierarchical"}},
            },
            "max_tokens": 300,
        },
        tokenizer=None,
        max_tokens=None,
    )
    params = {name: entry["params"] for name, entry in spec["chunkers"].items()}
    assert params == {
        "tok": {"chunk_overlap": 0, "chunk_size": 300},
        "rec": {"length": "tokens", "chunk_size": 300},
        "chars": {},
        "sized": {"length": "tokens", "chunk_size": 100},
        "hybrid": {"max_tokens": 300},
        "hier": {"chunker": "hierarchical"},
    }
    assert (spec["tokenizer"], spec["max_tokens"], spec["default"], spec["routes"]) == (
        "tiktoken:cl100k_base",
        300,
        None,
        [],
    )


def test_command_line_wins_over_the_file():
    spec = resolve_config(dict(DEFAULT_CONFIG), tokenizer="utf8-bytes", max_tokens=128)
    assert spec["tokenizer"] == "utf8-bytes" and spec["max_tokens"] == 128
    assert spec["chunkers"]["structure"]["params"]["max_tokens"] == 128
    assert spec["routes"] == [] and spec["default"] == "structure"


def test_docling_documents_go_to_the_structure_chunker_by_default_and_to_doclings_on_request():
    """The default routes every format, DoclingDocuments included, to StructureAwareChunker;
    configs/docling.yaml routes DoclingDocuments to docling-core's chunker, at the job's budget."""
    from transforms.chunkers import DoclingChunker, StructureAwareChunker
    from transforms.chunkers.registry import build_router
    from transforms.documents import Document
    from transforms.tokenizers import load_tokenizer

    tokenizer = load_tokenizer("utf8-bytes")
    documents = {fmt: Document(id=fmt, content="x", content_format=fmt) for fmt in ("docling", "markdown", "html")}
    default = build_router(resolve_config(load_config(None), tokenizer=None, max_tokens=None), tokenizer=tokenizer)
    assert {fmt: type(default.select(d)[1]) for fmt, d in documents.items()} == dict.fromkeys(
        documents, StructureAwareChunker
    )
    spec = resolve_config(load_config(str(REPO / "configs" / "docling.yaml")), tokenizer=None, max_tokens=256)
    assert spec["chunkers"]["docling"]["params"]["max_tokens"] == 256
    docling = build_router(spec, tokenizer=tokenizer)
    assert {fmt: type(docling.select(d)[1]) for fmt, d in documents.items()} == {
        "docling": DoclingChunker,
        "markdown": StructureAwareChunker,
        "html": StructureAwareChunker,
    }


def test_a_route_may_name_formats_by_any_case_and_their_common_names():
    config = dict(
        DEFAULT_CONFIG, routes=[{"when": {"content_format": ["MD", "markdown", " htm"]}, "chunker": "structure"}]
    )
    spec = resolve_config(config, tokenizer=None, max_tokens=None)
    assert spec["routes"][0]["when"]["content_format"] == ["html", "markdown"]


def test_a_route_naming_no_format_is_refused():
    config = dict(DEFAULT_CONFIG, routes=[{"when": {"content_format": ["markdwn"]}, "chunker": "structure"}])
    with pytest.raises(ConfigError, match=r"'markdwn' is not one of .* \(nor an alias of one\)"):
        resolve_config(config, tokenizer=None, max_tokens=None)


@pytest.mark.parametrize("budget", [0, -3, True, "512", 1_000_001])
def test_config_max_tokens_out_of_range_is_refused(budget):
    with pytest.raises(ConfigError, match="max_tokens must be"):
        resolve_config({**DEFAULT_CONFIG, "max_tokens": budget}, tokenizer=None, max_tokens=None)


def test_recount_is_independent_unless_the_configuration_says_same_engine():
    assert "recount" not in resolve_config(dict(DEFAULT_CONFIG), tokenizer=None, max_tokens=None)
    explicit = resolve_config({**DEFAULT_CONFIG, "recount": "independent"}, tokenizer=None, max_tokens=None)
    assert explicit == resolve_config(dict(DEFAULT_CONFIG), tokenizer=None, max_tokens=None)
    same = resolve_config({**DEFAULT_CONFIG, "recount": "same-engine"}, tokenizer=None, max_tokens=None)
    assert same["recount"] == "same-engine"
    with pytest.raises(ConfigError, match=r"^config: recount must be one of independent, same-engine, got 'x{59}$"):
        resolve_config({**DEFAULT_CONFIG, "recount": "x" * 500}, tokenizer=None, max_tokens=None)
