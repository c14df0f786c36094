"""The chunking policy called directly (``transforms.outcomes``): hold or stream, which reason
rejects a document, and the exact outcomes and counter increments of small documents; and the
chunking DoFns' ``teardown()`` releasing what ``setup()`` built."""

from __future__ import annotations

from typing import ClassVar

import pytest

from transforms import outcomes as outcomes_module
from transforms.chunkers.base import Chunker, ChunkingError, Piece
from transforms.chunkers.router import ChunkerRouter
from transforms.documents import DeadLetter, Document
from transforms.outcomes import (
    DocumentChunking,
    DocumentSummary,
    Failure,
    HeldOutputs,
    chunker_failure,
    validation_failure,
)
from transforms.tokenizers import load_tokenizer

TOKENIZER = load_tokenizer("utf8-bytes")
IDENTITY = TOKENIZER.identity


class _Words(Chunker):
    """One piece per space-separated word; ``fail_at`` makes that word fail as ``how`` says:
    ``raise`` (a chunker error), ``chunking`` (a ``ChunkingError``), ``page`` (a page number
    that does not fit int32)."""

    accepted_content_formats = None

    def __init__(self, *, fail_at: int = -1, how: str = "") -> None:
        self.fail_at = fail_at
        self.how = how

    def to_dict(self):
        return {"fail_at": self.fail_at, "how": self.how}

    def split(self, document):
        start = 0
        for i, word in enumerate(document.content.split(" ")):
            if i == self.fail_at and self.how == "raise":
                raise RuntimeError(f"kaboom at {i}")
            if i == self.fail_at and self.how == "chunking":
                raise ChunkingError("invalid_docling_json", f"bad at {i}")
            page = 2**32 if (i == self.fail_at and self.how == "page") else None
            yield Piece(text=word, start_offset=start, end_offset=start + len(word), page_no=page)
            start += len(word) + 1


def _chunking(*chunkers: _Words, default: str | None = "w", max_tokens: int = 4) -> DocumentChunking:
    router = ChunkerRouter(chunkers={"w": chunkers[0]} if chunkers else {}, default=default)
    return DocumentChunking(router, tokenizer=TOKENIZER, max_tokens=max_tokens)


def _outcomes(chunking: DocumentChunking, content: str) -> list:
    return list(chunking.outcomes(Document(id="doc", content=content), IDENTITY))


def _shape(outcomes: list) -> list:
    """Each outcome as plain data: ``("row", text)``, ``("dead", reason, stage, detail, payload,
    chunk_id is None, chunker)`` or ``("summary", counters, manifest chunk count, progress)``."""
    shaped: list[tuple] = []
    for o in outcomes:
        if isinstance(o, DeadLetter):
            shaped.append(("dead", o.reason, o.stage, o.detail, o.payload, o.chunk_id is None, o.chunker))
        elif isinstance(o, DocumentSummary):
            shaped.append(("summary", o.counters, o.manifest and o.manifest["chunk_count"], o.progress_chunks))
        else:
            shaped.append(("row", o["text"]))
    return shaped


def test_held_outputs_stream_from_the_output_that_passes_the_limit_on():
    held = HeldOutputs(5)
    row = {"text": "abc", "chunk_index": 0}
    dead = DeadLetter("d", "validate", "empty_chunk", "x", "xyz", "t")
    assert held.add(row) is False  # 3 characters held
    assert held.add(dead) is True  # 6 > 5: emit now
    assert list(held.drain()) == [row, dead]
    assert held.add({"text": "a"}) is True  # streaming, to the end of the document
    assert list(held.drain()) == [{"text": "a"}]
    assert (held.accepted, held.rejected, held.emitted_accepted, held.emitted_rejected) == (2, 1, 2, 1)
    assert list(held.drain()) == []


def test_failures_name_their_stage_reason_and_detail():
    assert chunker_failure(RuntimeError("bad\n  thing")) == Failure("chunk", "chunker_error", "RuntimeError: bad thing")
    assert chunker_failure(ChunkingError("invalid_docling_json", "not JSON")) == Failure(
        "chunk", "invalid_docling_json", "not JSON"
    )
    assert chunker_failure(ChunkingError("unsupported_content_format", "html")) == Failure(
        "route", "unsupported_content_format", "html"
    )
    assert chunker_failure(ValueError("x" * 400)).detail == "ValueError: " + "x" * 300
    assert validation_failure(KeyError("k")) == Failure("validate", "chunker_error", "validation failed: KeyError: 'k'")


def test_a_partly_rejected_document_gives_its_rows_in_order_and_exact_counts():
    # utf8-bytes: one token a byte; "cdefgh" is 6 tokens > 4
    outcomes = _outcomes(_chunking(_Words()), "ab cdefgh ij")
    assert _shape(outcomes) == [
        ("row", "ab"),
        ("dead", "token_budget_exceeded", "validate", "6 tokens > max 4", "cdefgh", False, "_Words"),
        ("row", "ij"),
        (
            "summary",
            (
                ("chunks_written", 2),
                ("chunks_rejected", 1),
                ("documents_chunked", 1),
                ("chunks_by_chunker._Words", 2),
                ("documents_partially_rejected", 1),
            ),
            None,
            2,
        ),
    ]
    assert [o["token_count"] for o in outcomes if isinstance(o, dict)] == [2, 2]  # recounted


def test_a_fully_accepted_document_gives_its_manifest_row():
    outcomes = _outcomes(_chunking(_Words()), "ab cd")
    summary = outcomes[-1]
    assert summary.counters == (
        ("chunks_written", 2),
        ("chunks_rejected", 0),
        ("documents_chunked", 1),
        ("chunks_by_chunker._Words", 2),
    )
    assert (summary.manifest["document_id"], summary.manifest["chunk_count"], summary.progress_chunks) == ("doc", 2, 2)


def test_a_document_with_no_chunk_accepted_counts_as_dead_lettered_once():
    assert _shape(_outcomes(_chunking(_Words()), "abcdef"))[-1] == (
        "summary",
        (("chunks_written", 0), ("chunks_rejected", 1), ("documents_dead_lettered", 1)),
        None,
        0,
    )


def test_no_route_and_no_chunk_reject_the_whole_document():
    assert _shape(_outcomes(_chunking(_Words(), default=None), "ab")) == [
        ("dead", "no_route", "route", _no_route_detail(), "ab", True, None),
        ("summary", (("documents_dead_lettered", 1),), None, None),
    ]
    assert _shape(_outcomes(_chunking(_Words()), " ")) == [
        ("dead", "empty_document", "chunk", "_Words found no text to chunk", " ", True, "_Words"),
        ("summary", (("chunks_written", 0), ("chunks_rejected", 0), ("documents_dead_lettered", 1)), None, None),
    ]


def _no_route_detail() -> str:
    return "no route matches content_format 'text' and there is no default chunker"


@pytest.mark.parametrize("held_chars", [10**6, 0])
def test_a_later_chunker_error_rejects_the_document_and_keeps_what_streamed(monkeypatch, held_chars):
    monkeypatch.setattr(outcomes_module, "MAX_HELD_CHARS", held_chars)
    shaped = _shape(_outcomes(_chunking(_Words(fail_at=2, how="raise")), "ab cd ef"))
    streamed = [("row", "ab"), ("row", "cd")] if held_chars == 0 else []
    assert shaped == [
        *streamed,
        ("dead", "chunker_error", "chunk", "RuntimeError: kaboom at 2", "ab cd ef", True, "_Words"),
        (
            "summary",
            (("chunks_written", len(streamed)), ("chunks_rejected", 0), ("documents_dead_lettered", 1)),
            None,
            None,
        ),
    ]


def test_a_chunker_error_after_a_validation_failure_decides_the_reason():
    class _Both(_Words):
        """Word 1 cannot be written (its page number), word 3 fails the chunker."""

        def split(self, document):
            for i, piece in enumerate(super().split(document)):
                if i == 3:
                    raise ChunkingError("invalid_docling_json", "bad at 3")
                yield piece

    only_validation = _shape(_outcomes(_chunking(_Words(fail_at=1, how="page")), "ab cd ef gh"))
    assert only_validation[0] == (
        "dead",
        "chunker_error",
        "validate",
        "validation failed: ValueError: page_no 4294967296 does not fit int32",
        "ab cd ef gh",
        True,
        "_Words",
    )
    both = _shape(_outcomes(_chunking(_Both(fail_at=1, how="page")), "ab cd ef gh"))
    assert both[0] == ("dead", "invalid_docling_json", "chunk", "bad at 3", "ab cd ef gh", True, "_Both")


class _FakeModel:
    """A model holding something to release; counts its calls as the real clients do."""

    instances: ClassVar[list[_FakeModel]] = []

    def __init__(self) -> None:
        self.calls = 0
        self.cache_hits = 0
        self.closed = 0
        _FakeModel.instances.append(self)

    @property
    def identity(self) -> str:
        return "fake"

    def close(self) -> None:
        self.closed += 1


def test_model_usage_reports_what_grew_since_the_last_call():
    router = ChunkerRouter(chunkers={"w": _Words()}, default="w")
    first, second = _FakeModel(), _FakeModel()
    router.models = {"a": first, "b": second}
    chunking = DocumentChunking(router, tokenizer=TOKENIZER, max_tokens=4)
    assert chunking.model_usage() == []
    first.calls, second.calls, second.cache_hits = 2, 1, 4
    assert chunking.model_usage() == [("model.calls", 3), ("model.cache_hits", 4)]
    second.calls += 1
    assert chunking.model_usage() == [("model.calls", 1)]
    chunking.close()
    assert (first.closed, second.closed) == (1, 1)


def _spec_with_a_model(monkeypatch):
    from pipelines.config import resolve_config
    from transforms import chunkers as chunkers_module
    from transforms.models.registry import MODELS

    monkeypatch.setitem(chunkers_module.CHUNKERS, "_Words", _Words)
    monkeypatch.setitem(MODELS, "_FakeModel", __name__)
    _FakeModel.instances.clear()
    return resolve_config(
        {"models": {"m": {"type": "_FakeModel"}}, "chunkers": {"w": {"type": "_Words"}}, "default": "w"},
        tokenizer="utf8-bytes",
        max_tokens=4,
    )


def test_chunk_dofn_teardown_closes_the_models_setup_built(monkeypatch):
    from transforms.beam.chunk import _ChunkDoFn

    dofn = _ChunkDoFn(_spec_with_a_model(monkeypatch))
    dofn.setup()
    (model,) = _FakeModel.instances
    assert len(list(dofn.process(Document(id="d", content="ab cd"), IDENTITY))) == 3  # 2 rows, 1 manifest row
    dofn.teardown()
    assert model.closed == 1
    assert (dofn._chunking, dofn._tokenizer, dofn._progress) == (None, None, None)
    dofn.teardown()  # a second teardown closes nothing again
    assert model.closed == 1


def test_select_changed_dofn_teardown_closes_the_models_setup_built(monkeypatch):
    from transforms.beam.incremental import _SelectChangedDoFn

    dofn = _SelectChangedDoFn(_spec_with_a_model(monkeypatch))
    dofn.setup()
    (model,) = _FakeModel.instances
    dofn.teardown()
    assert (model.closed, dofn._router, dofn._progress) == (1, None, None)


class _OneEngineWrong:
    """utf8-bytes counting, whose ``independent()`` twin (another engine) counts one token more
    a word: an engine that disagrees with the one the chunks were made with."""

    identity = IDENTITY

    def __init__(self, extra: int = 0) -> None:
        self.extra = extra

    def count(self, text: str) -> int:
        return TOKENIZER.count(text) + self.extra

    def boundaries(self, text: str):
        return TOKENIZER.boundaries(text)

    def independent(self) -> _OneEngineWrong:
        return _OneEngineWrong(extra=1)


@pytest.mark.parametrize(
    ("recount", "expected"),
    [
        # The other engine's count decides: "abcd" is 5 tokens to it, over the budget of 4.
        ("independent", [("row", "ab"), ("dead", "token_budget_exceeded", "5 tokens > max 4"), ("row", "ij")]),
        # The chunkers' own engine recounts: "abcd" fits.
        ("same-engine", [("row", "ab"), ("row", "abcd"), ("row", "ij")]),
    ],
)
def test_the_recount_runs_on_the_engine_the_configuration_names(recount, expected):
    router = ChunkerRouter(chunkers={"w": _Words()}, default="w")
    chunking = DocumentChunking(router, tokenizer=_OneEngineWrong(), max_tokens=4, recount=recount)
    outcomes = list(chunking.outcomes(Document(id="doc", content="ab abcd ij"), IDENTITY))
    shaped = [
        ("dead", o.reason, o.detail) if isinstance(o, DeadLetter) else ("row", o["text"])
        for o in outcomes
        if not isinstance(o, DocumentSummary)
    ]
    assert shaped == expected
