"""Chunks stream from the chunker through validation to the writer, a chunk at a time; a
document whose later chunk fails is still handled as a whole (see ``transforms.outcomes.MAX_HELD_CHARS``)."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pvalue import TaggedOutput
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipelines.config import resolve_config
from transforms import chunkers as chunkers_module
from transforms import outcomes as outcomes_module
from transforms.beam import DEAD_LETTER, MANIFEST, AdmitDocuments, ChunkDocuments
from transforms.beam.chunk import _ChunkDoFn
from transforms.chunkers.base import Chunker, ChunkingError, Piece
from transforms.documents import DeadLetter, Document
from transforms.tokenizers import load_tokenizer

WORDS = [f"word{i}" for i in range(6)]
CONTENT = " ".join(WORDS)
EVENTS: list[str] = []


class _Words(Chunker):
    """One piece per word; ``fail_at`` makes the piece at that index fail in the way ``how`` says."""

    accepted_content_formats = None

    def __init__(self, *, fail_at: int = -1, how: str = "") -> None:
        self.fail_at = fail_at
        self.how = how

    def to_dict(self):
        return {"fail_at": self.fail_at, "how": self.how}

    def split(self, document):
        start = 0
        for i, word in enumerate(document.content.split(" ")):
            EVENTS.append(f"piece {i}")
            if i == self.fail_at and self.how == "raise":
                raise RuntimeError(f"kaboom at {i}")
            if i == self.fail_at and self.how == "chunking":
                raise ChunkingError("invalid_docling_json", f"bad at {i}")
            yield Piece(
                text=word,
                start_offset=start,
                end_offset=start + len(word),
                page_no=2**32 if (i == self.fail_at and self.how == "page") else None,
            )
            start += len(word) + 1


@pytest.fixture(autouse=True)
def _registered(monkeypatch):
    monkeypatch.setitem(chunkers_module.CHUNKERS, "_Words", _Words)


def _spec(**params):
    return resolve_config(
        {"chunkers": {"w": {"type": "_Words", "params": params}}, "default": "w"},
        tokenizer="tiktoken:cl100k_base",
        max_tokens=8,
    )


def _run(monkeypatch, spec, held_chars=None):
    """(chunk ids, dead-letter (reason, stage, chunk_id is None, detail prefix), manifest ids)."""
    monkeypatch.setitem(chunkers_module.CHUNKERS, "_Words", _Words)
    if held_chars is not None:
        monkeypatch.setattr(outcomes_module, "MAX_HELD_CHARS", held_chars)
    identity = load_tokenizer(spec["tokenizer"]).identity
    rows = [{"id": "doc", "content": CONTENT, "content_format": "text", "metadata": None}]
    p = BeamTestPipeline(options=PipelineOptions(runner="FnApiRunner"))
    ident = p | "identity" >> beam.Create([identity])
    admitted = p | beam.Create(rows) | AdmitDocuments(ident)
    out = admitted.documents | ChunkDocuments(spec, ident)
    return p, out


@pytest.mark.slow
def test_a_later_chunker_error_rejects_the_whole_document_with_nothing_written(monkeypatch):
    p, out = _run(monkeypatch, _spec(fail_at=4, how="raise"))
    assert_that(out.chunks, equal_to([]), label="no chunks")
    assert_that(out[MANIFEST], equal_to([]), label="no manifest")
    assert_that(
        out[DEAD_LETTER] | beam.Map(lambda d: (d.reason, d.stage, d.chunk_id, d.detail, d.payload)),
        equal_to([("chunker_error", "chunk", None, "RuntimeError: kaboom at 4", CONTENT)]),
        label="dead",
    )
    p.run().wait_until_finish()


@pytest.mark.slow
def test_a_later_chunk_that_cannot_be_written_rejects_the_whole_document(monkeypatch):
    p, out = _run(monkeypatch, _spec(fail_at=3, how="page"))
    assert_that(out.chunks, equal_to([]), label="no chunks")
    assert_that(
        out[DEAD_LETTER] | beam.Map(lambda d: (d.reason, d.stage, d.detail, d.payload)),
        equal_to(
            [
                (
                    "chunker_error",
                    "validate",
                    "validation failed: ValueError: page_no 4294967296 does not fit int32",
                    CONTENT,
                )
            ]
        ),
        label="dead",
    )
    p.run().wait_until_finish()


@pytest.mark.slow
def test_a_chunker_error_after_a_validation_error_decides_the_reason(monkeypatch):
    """As when the whole document is chunked before validation: the chunker's error wins."""

    class _Both(_Words):
        def split(self, document):
            for i, piece in enumerate(super().split(document)):
                if i == 2:
                    yield Piece(
                        text=piece.text, start_offset=piece.start_offset, end_offset=piece.end_offset, page_no=2**32
                    )
                    raise ChunkingError("invalid_docling_json", "bad later")
                yield piece

    monkeypatch.setitem(chunkers_module.CHUNKERS, "_Both", _Both)
    spec = resolve_config(
        {"chunkers": {"w": {"type": "_Both"}}, "default": "w"}, tokenizer="tiktoken:cl100k_base", max_tokens=8
    )
    p, out = _run(monkeypatch, spec)
    assert_that(out.chunks, equal_to([]), label="no chunks")
    assert_that(
        out[DEAD_LETTER] | beam.Map(lambda d: (d.reason, d.stage, d.detail)),
        equal_to([("invalid_docling_json", "chunk", "bad later")]),
        label="dead",
    )
    p.run().wait_until_finish()


def _dofn(monkeypatch, held_chars, **params):
    monkeypatch.setitem(chunkers_module.CHUNKERS, "_Words", _Words)
    monkeypatch.setattr(outcomes_module, "MAX_HELD_CHARS", held_chars)
    dofn = _ChunkDoFn(_spec(**params))
    dofn.setup()
    return dofn, dofn._tokenizer.identity


def test_each_chunk_is_written_before_the_next_is_built_once_past_the_held_limit(monkeypatch):
    dofn, identity = _dofn(monkeypatch, 0)
    EVENTS.clear()
    for output in dofn.process(Document(id="doc", content=CONTENT), identity):
        if isinstance(output, dict):
            EVENTS.append(f"row {output['chunk_index']}")
    expected = [e for i in range(len(WORDS)) for e in (f"piece {i}", f"row {i}")]
    assert expected == EVENTS


def test_below_the_held_limit_nothing_is_emitted_before_the_last_chunk(monkeypatch):
    dofn, identity = _dofn(monkeypatch, 10**6)
    EVENTS.clear()
    for output in dofn.process(Document(id="doc", content=CONTENT), identity):
        if isinstance(output, dict):
            EVENTS.append(f"row {output['chunk_index']}")
    assert [f"piece {i}" for i in range(len(WORDS))] + [f"row {i}" for i in range(len(WORDS))] == EVENTS


def test_past_the_held_limit_a_later_failure_keeps_the_rows_written_and_rejects_the_document(monkeypatch):
    dofn, identity = _dofn(monkeypatch, 0, fail_at=4, how="raise")
    outputs = list(dofn.process(Document(id="doc", content=CONTENT), identity))
    rows = [o for o in outputs if isinstance(o, dict)]
    dead = [o.value for o in outputs if isinstance(o, TaggedOutput) and o.tag == DEAD_LETTER]
    assert [r["chunk_index"] for r in rows] == [0, 1, 2, 3]
    assert [(d.reason, d.stage, d.chunk_id, d.payload) for d in dead] == [("chunker_error", "chunk", None, CONTENT)]
    assert not [o for o in outputs if isinstance(o, TaggedOutput) and o.tag == MANIFEST]
    assert all(isinstance(d, DeadLetter) for d in dead)


def _outputs(dofn, identity, content):
    out = []
    for o in dofn.process(Document(id="doc", content=content), identity):
        if isinstance(o, dict):
            out.append(("chunk", o["chunk_id"], o["token_count"]))
        elif o.tag == DEAD_LETTER:
            out.append(("dead", o.value.chunk_id, o.value.reason, o.value.payload))
        else:
            out.append((o.tag, o.value["document_id"], o.value["chunk_count"]))
    return sorted(out, key=repr)


def test_streamed_output_is_the_held_output(monkeypatch):
    """With nothing held back (every row streams) the rows and the dead letter are the same."""
    content = "hello world supercalifragilisticexpialidocious hello"
    results = {}
    for held in (10**6, 0):
        monkeypatch.setattr(outcomes_module, "MAX_HELD_CHARS", held)
        dofn = _ChunkDoFn(
            resolve_config(
                {"chunkers": {"w": {"type": "_Words"}}, "default": "w"}, tokenizer="tiktoken:cl100k_base", max_tokens=1
            )
        )
        dofn.setup()
        results[held] = _outputs(dofn, dofn._tokenizer.identity, content)
    assert results[0] == results[10**6]
    assert [r[0] for r in results[0]] == ["chunk"] * 3 + ["dead"]
    assert results[0][3][2:] == ("token_budget_exceeded", "supercalifragilisticexpialidocious")
    # all accepted: the manifest row comes at the end, in both modes
    for held in (10**6, 0):
        dofn, identity = _dofn(monkeypatch, held)
        assert (MANIFEST, "doc", len(WORDS)) in _outputs(dofn, identity, CONTENT)
